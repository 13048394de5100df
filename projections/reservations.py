"""Queries on path reservations: who holds which paths now, what a step would collide
with, and which reservations some paths or files meet.

A reservation is live while the claim that made it is (ledger.domain.reservations): its
step at the same fence, held by the same session with its lease running. The view keeps
each step's latest reservation; liveness is judged here, at the caller's `now`, with the
claim rule's own `live_holder`, so these answers and the write side never disagree.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.paths import Budget, PathSpec, conflict, covers, overlaps
from planledger.ledger.domain.references import step_reference
from planledger.ledger.domain.reservations import Reservation
from planledger.projections.view import LedgerView


@dataclass(frozen=True)
class HeldPaths:
    """A live reservation: the step, its holder, until when, and its paths."""

    step_id: StepId
    plan: PlanSlug
    title: str
    session_id: SessionId
    session_name: str | None
    fence: int
    expires_at: datetime
    paths: tuple[PathSpec, ...]
    ref: str | None = None  # the step's reference, `plan#N`


@dataclass(frozen=True)
class Meeting:
    """A live reservation some paths meet, and its patterns they meet."""

    held: HeldPaths
    patterns: tuple[str, ...]


def _held(view: LedgerView, reservation: Reservation, now: datetime) -> HeldPaths | None:
    step = view.steps.get(reservation.step_id)
    if step is None or step.expires_at is None:
        return None
    if not reservation.live(step, now, view.holder_ended(step)):
        return None
    definition = view.definition(step.id)
    session = view.sessions.get(reservation.session)
    return HeldPaths(step.id, step.plan, definition.title if definition else "",
                     reservation.session, session.name if session else None, step.fence,
                     step.expires_at, reservation.paths,
                     step_reference(step.plan, definition.position) if definition else None)


def live(view: LedgerView, now: datetime) -> list[HeldPaths]:
    """Every live reservation, soonest expiry first."""
    found = [h for r in view.reservations.values() if (h := _held(view, r, now)) is not None]
    found.sort(key=lambda h: (h.expires_at, h.step_id))
    return found


def of_step(view: LedgerView, step_id: StepId, now: datetime) -> HeldPaths | None:
    """The step's live reservation, if its claim holds one."""
    reservation = view.reservations.get(step_id)
    return _held(view, reservation, now) if reservation is not None else None


def collisions(view: LedgerView, paths: Sequence[PathSpec], now: datetime,
               session: SessionId | None = None, among: Sequence[HeldPaths] | None = None,
               budget: Budget | None = None) -> list[Meeting]:
    """The live reservations a claim of these paths would bounce off: those of sessions
    other than `session` (the claimer, if known) they conflict with. `among`: the live
    reservations, when the caller has them already; `budget`: the request's, when it asks
    for several steps (OverBudget once it is spent)."""
    if not paths:
        return []
    held = live(view, now) if among is None else among
    found = []
    budget = budget or Budget()
    for other in held:
        if other.session_id == session:
            continue
        theirs = tuple(t.pattern for t in other.paths
                       if any(conflict(p, t, budget) for p in paths))
        if theirs:
            found.append(Meeting(other, theirs))
    return found


def meeting(live_ones: Sequence[HeldPaths], patterns: Sequence[str] = (),
            files: Sequence[str] = (), exclusive_only: bool = False,
            but: SessionId | None = None) -> list[Meeting]:
    """Which of the live reservations (`live`'s) some patterns overlap or some files
    (paths taken literally) fall under, with the reserved patterns they meet;
    `exclusive_only` leaves shared reservations out, `but` one session's. It reads no view,
    so it is decided outside the read model's lock; OverBudget past a request's budget."""
    found = []
    budget = Budget(field="files" if files and not patterns else "paths")
    for held in live_ones:
        if held.session_id == but:
            continue
        theirs = tuple(t.pattern for t in held.paths if (t.exclusive or not exclusive_only)
                       and (any(overlaps(p, t.pattern, budget) for p in patterns)
                            or any(covers(t.pattern, f, budget) for f in files)))
        if theirs:
            found.append(Meeting(held, theirs))
    return found
