"""Handlers of the review gate (ledger.domain.review): a reviewer's verdict, and
claim-next handing a reviewer a step in review."""

# Annotations stay unevaluated, as in claim_handlers: each command defines its attempt anew.
from __future__ import annotations

from datetime import datetime
from typing import Any

from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain.claims import Decision, check_lease, reviewer
from planledger.ledger.domain.events import LeaseRenewed, ReviewClaimed
from planledger.ledger.domain.ids import Actor, PlanSlug, SessionId, StepId
from planledger.ledger.domain.references import step_reference
from planledger.ledger.domain.review import (
    check_verdict,
    decide_review,
    decide_review_claim,
    own_work,
)
from planledger.ledger.domain.state import SessionState, Status, StepDef, StepState
from planledger.ledger.execution import Execution, Outcome
from planledger.ledger.parents import with_parents_closed


def _author(run: Execution, step: StepState) -> SessionState | None:
    """The session that submitted the step for review (its key decides four eyes)."""
    return run.store.session(step.author) if step.author else None


def _names(run: Execution) -> Any:
    return lambda s: run.store.session(s).name


def review(run: Execution, command: c.Review) -> c.StepChanged:
    verdict = check_verdict(command.verdict)  # refused before anything is decided

    def attempt(now: datetime, fresh: bool) -> Outcome[c.StepChanged]:
        session = run.live_session(command.actor)
        step, definition, plan = run.step(command.step_id, fresh=fresh)
        current = reviewer(step, now, run.holder_ended(step, session))
        decision = decide_review(step, definition, session, _author(run, step), current,
                                 verdict, command.note, now, names=_names(run))
        status: Status = "done" if verdict == "approve" else "open"
        if status == "done":
            decision = with_parents_closed(run, decision, plan, definition,
                                           Actor(session.id), now)
        return Outcome(decision, c.StepChanged(
            step.id, step.plan, status, step_reference(plan.slug, definition.position)))

    return run.decide_on_cached_step(attempt, command.step_id)


def claim_review(run: Execution, step_id: StepId, session_id: str,
                 lease_seconds: int) -> c.Grant:
    """Take a step in review for reviewing (or renew the caller's review lease)."""

    def attempt(now: datetime, fresh: bool) -> Outcome[c.Grant]:
        session = run.live_session(session_id)
        step, definition, _ = run.step(step_id, fresh=fresh)
        current = reviewer(step, now, run.holder_ended(step, session))
        decision = decide_review_claim(step, definition, session, _author(run, step),
                                       current, lease_seconds, now, names=_names(run))
        return Outcome(decision, review_grant(decision, session.id, step.plan, definition))

    return run.decide_on_cached_step(attempt, step_id)


def review_grant(decision: Decision, session: SessionId, plan: PlanSlug,
                 definition: StepDef) -> c.Grant | None:
    """The grant a claim to review (or its renewal) answers; None on a refusal."""
    if decision.refusal is not None:
        return None
    event = decision.events[0]
    assert isinstance(event, ReviewClaimed | LeaseRenewed)
    return c.Grant(StepId(event.originator_id), session, event.fence, event.expires_at,
                   renewed=isinstance(event, LeaseRenewed), plan=plan, title=definition.title,
                   review=True, ref=step_reference(plan, definition.position))


def claim_next_review(run: Execution, command: c.ClaimNext, slug: PlanSlug,
                      candidates: Execution) -> c.NextClaim:
    """The first step in review the caller may review and wins, by priority then age.
    Steps that are the caller's own work (or its key's) are passed by without a
    refusal being recorded: the caller did not ask for them by name."""
    if command.wait_seconds:
        raise errors.InvalidInput("wait_seconds", "a claim-next for review answers at once: "
                                  "waiting is for steps to claim")
    lease = check_lease(run.lease_default if command.lease_seconds is None
                        else command.lease_seconds)
    session = run.live_session(command.actor)
    for step_id in run.view.review_order(slug):
        step = run.store.step(step_id)
        if step.status != "in_review" or own_work(step, session, _author(run, step)):
            continue
        if reviewer(step, run.clock.now(), run.holder_ended(step)) is not None:
            continue  # the view lagged behind another reviewer's claim
        try:
            granted = claim_review(candidates, step_id, command.actor, lease)
            return c.NextClaim(slug, granted, review=True)
        except (errors.AlreadyClaimed, errors.NotInReview, errors.OwnWork):
            continue
    found = c.NextClaim(slug, None, review=True)
    run.append(Outcome(Decision([]), found))  # no decision: only what is attached lands
    return found
