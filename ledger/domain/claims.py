"""The claim rule, in one place: what a claim on a step would do right now.

`assess` is shared by the write side (deciding a claim) and the read side (listing
ready steps), so "ready" and "claim" can never disagree.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import SessionId, StepId
from planledger.ledger.domain.state import SATISFYING, StepDef, StepState

DEFAULT_LEASE_SECONDS = 900
MIN_LEASE_SECONDS = 1
MAX_LEASE_SECONDS = 24 * 3600

VerdictKind = Literal["claimable", "held", "blocked", "closed", "in_review"]


@dataclass(frozen=True)
class Verdict:
    """What a claim would meet: `holder` is the live holder when held (in review: the live
    reviewer, if any), the lapsed one when claimable after a lapse; `blockers` pairs each
    unsatisfied dependency with its status."""

    kind: VerdictKind
    holder: SessionId | None = None
    blockers: tuple[tuple[StepId, str], ...] = ()


def live_holder(step: StepState, now: datetime, holder_ended: bool) -> SessionId | None:
    """The session holding the step at `now`; a lease at or past expiry no longer holds."""
    if step.status != "in_progress" or step.holder is None or step.expires_at is None:
        return None
    if holder_ended or now >= step.expires_at:
        return None
    return step.holder


def reviewer(step: StepState, now: datetime, holder_ended: bool) -> SessionId | None:
    """The session reviewing the step at `now` (ledger.domain.review): its review lease is
    live and its session has not ended."""
    if step.status != "in_review" or step.holder is None or step.expires_at is None:
        return None
    if holder_ended or now >= step.expires_at:
        return None
    return step.holder


def assess(
    step: StepState,
    definition: StepDef,
    status_of: Callable[[StepId], str],
    holder_ended: bool,
    now: datetime,
) -> Verdict:
    """Judge a claim on `step` at `now`; `status_of` gives each dependency's status."""
    if step.status in SATISFYING:
        return Verdict("closed")
    if step.status == "in_review":
        return Verdict("in_review", holder=reviewer(step, now, holder_ended))
    holder = live_holder(step, now, holder_ended)
    if holder is not None:
        return Verdict("held", holder=holder)
    blockers = tuple(
        (dep, status)
        for dep in definition.waits_on  # its dependencies, then (a parent) its children
        if (status := status_of(dep)) not in SATISFYING
    )
    if blockers:
        return Verdict("blocked", blockers=blockers)
    return Verdict("claimable", holder=step.holder if step.status == "in_progress" else None)


def check_lease(lease_seconds: int) -> int:
    if not MIN_LEASE_SECONDS <= lease_seconds <= MAX_LEASE_SECONDS:
        raise errors.InvalidInput(
            "lease_seconds",
            f"{lease_seconds} is outside {MIN_LEASE_SECONDS}..{MAX_LEASE_SECONDS} seconds",
        )
    return lease_seconds


def lease_end(now: datetime, lease_seconds: int) -> datetime:
    """When a lease granted at `now` ends; a clock so far ahead that it would end past the
    last date a datetime holds is refused, not left to overflow."""
    try:
        return now + timedelta(seconds=lease_seconds)
    except OverflowError:
        raise errors.InvalidInput("lease_seconds", f"a lease of {lease_seconds} s from "
                                  f"{now.isoformat()} would end after the year 9999: the "
                                  "ledger's clock, or its log's newest event, is wrong"
                                  ) from None


@dataclass(frozen=True)
class Decision:
    """Events to append, and the refusal to raise once they are stored (if any)."""

    events: Sequence[ev.LedgerEvent]
    refusal: errors.LedgerError | None = None


def renew(step: StepState, session: SessionId, lease_seconds: int,
          now: datetime) -> ev.LeaseRenewed:
    """The holder's heartbeat (a reviewer's claim to review, too): the same fence, a lease that ends
    `lease_seconds` from now, or later. A heartbeat extends the lease, never shortens it: a
    shorter `lease_seconds` (a default that changed, say) keeps the expiry granted."""
    expires_at = lease_end(now, lease_seconds)
    if step.expires_at is not None and step.expires_at > expires_at:
        expires_at = step.expires_at
    return ev.LeaseRenewed(step.id, step.version + 1, timestamp=now, session_id=session,
                           actor=session, fence=step.fence, lease_seconds=lease_seconds,
                           expires_at=expires_at)


def decide_claim(
    step: StepState,
    definition: StepDef,
    verdict: Verdict,
    session: SessionId,
    session_version: int,
    lease_seconds: int,
    titles: Callable[[StepId], str],
    now: datetime,
    *,
    names: Callable[[SessionId], str | None] = lambda _: None,
    refs: Callable[[StepId], str | None] = lambda _: None,
) -> Decision:
    """Grant, renew (the holder's heartbeat) or refuse a claim, per the verdict. `names`
    gives a session's name (a bounce names the holder by id and by name); `refs` a step's
    reference in its plan (`plan#N`), which a refusal's message names steps by (the
    refusal's event keeps ids)."""
    if verdict.kind == "held" and verdict.holder == session:
        return Decision([renew(step, session, lease_seconds, now)])
    expires_at = lease_end(now, lease_seconds)
    if verdict.kind == "claimable":
        claimed = ev.StepClaimed(
            step.id, step.version + 1, timestamp=now, session_id=session, actor=session,
            fence=step.fence + 1,
            lease_seconds=lease_seconds, expires_at=expires_at,
        )
        return Decision([claimed])
    return _refuse_claim(step, definition, verdict, session, session_version, lease_seconds,
                         titles, now, names, refs)


def _refuse_claim(
    step: StepState,
    definition: StepDef,
    verdict: Verdict,
    session: SessionId,
    session_version: int,
    lease_seconds: int,
    titles: Callable[[StepId], str],
    now: datetime,
    names: Callable[[SessionId], str | None],
    refs: Callable[[StepId], str | None],
) -> Decision:
    version = session_version + 1
    if verdict.kind == "held":
        holder = verdict.holder or SessionId("")
        bounced = ev.ClaimBounced(
            session, version, timestamp=now, session_id=session, actor=session, step_id=step.id,
            holder=holder,
            holder_fence=step.fence, lease_seconds=lease_seconds,
        )
        left = (step.expires_at - now).total_seconds() if step.expires_at else 0.0
        bounce = errors.AlreadyClaimed(
            step.id, definition.title, holder, step.fence, holder_name=names(holder),
            retry_after=max(0, math.ceil(left)), ref=refs(step.id),
        )
        return Decision([bounced], bounce)
    refusal: errors.Blocked | errors.InReview | errors.Closed
    if verdict.kind == "blocked":
        steps = (step.id, *(b for b, _ in verdict.blockers))
        named: dict[str, str] = {s: r for s in steps if (r := refs(s)) is not None}
        refusal = errors.Blocked(
            step.id, definition.title, [(b, titles(b), s) for b, s in verdict.blockers], named
        )
    elif verdict.kind == "in_review":  # (its reviewer renews with a claim to review)
        refusal = errors.InReview(step.id, definition.title, verdict.holder == session)
    else:
        refusal = errors.Closed(step.id, definition.title, step.status, refs(step.id))
    refused = ev.ClaimRefused(
        session, version, timestamp=now, session_id=session, actor=session, step_id=step.id,
        reason=verdict.kind,  # type: ignore[arg-type]
        # The message by id, as ever: people read it by reference (refusal's own text).
        detail=str(refusal) if isinstance(refusal, errors.InReview) else refusal.detail,
        lease_seconds=lease_seconds,
    )
    return Decision([refused], refusal)
