"""Handlers of the claim's life: claim (and heartbeat), claim-next, complete, release,
drop, reopen and force-release. Each reads fresh state, asks the domain, and returns
its command's result."""

# Annotations stay unevaluated: each command defines its attempt anew, and evaluating
# `Outcome[Grant]` on every definition cost a subscription per command.
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from planledger.ledger import commands as c
from planledger.ledger.domain import closing, errors
from planledger.ledger.domain.claims import (
    Decision,
    Verdict,
    assess,
    check_lease,
    decide_claim,
    renew,
)
from planledger.ledger.domain.events import LeaseRenewed, StepClaimed
from planledger.ledger.domain.evidence import check_evidence
from planledger.ledger.domain.ids import Actor, PlanSlug, SessionId, StepId, acting_session
from planledger.ledger.domain.paths import PathSpec, check_paths
from planledger.ledger.domain.references import step_reference
from planledger.ledger.domain.review import needs_review
from planledger.ledger.domain.state import (
    SATISFYING,
    Note,
    PlanState,
    SessionState,
    Status,
    StepDef,
    StepState,
)
from planledger.ledger.execution import Execution, Outcome
from planledger.ledger.parents import with_parents_closed
from planledger.ledger.reserving import (
    collides,
    reserve,
    with_kept,
    with_reserved,
    with_warnings,
)
from planledger.ledger.review_handlers import claim_next_review, claim_review, review_grant


def _lease(run: Execution, lease_seconds: int | None) -> int:
    return check_lease(run.lease_default if lease_seconds is None else lease_seconds)


def _grant(decision: Decision, verdict: Verdict, session: SessionId, plan: PlanSlug,
           definition: StepDef, notes: tuple[Note, ...] = ()) -> c.Grant | None:
    """The grant a claim's decision stands for (None for a refusal). A new grant on a step
    whose lease lapsed took over from its holder; it carries the notes left since the
    step's last claim (a heartbeat, none: its holder has read them)."""
    if decision.refusal is not None:
        return None
    event = decision.events[0]
    assert isinstance(event, StepClaimed | LeaseRenewed)
    renewed = isinstance(event, LeaseRenewed)
    lapsed = None if renewed or verdict.holder == session else verdict.holder
    handed, left_out = closing.handed_notes(() if renewed else notes)
    return c.Grant(StepId(event.originator_id), session, event.fence, event.expires_at,
                   renewed=renewed, took_over_from=lapsed, plan=plan,
                   title=definition.title, notes=handed, notes_left_out=left_out,
                   ref=step_reference(plan, definition.position))


def claim(run: Execution, command: c.Claim) -> c.Grant:
    if command.review:
        if command.paths:
            raise errors.InvalidInput("paths", "a claim to review reserves no paths")
        return claim_review(run, StepId(command.step_id), command.actor,
                            _lease(run, command.lease_seconds))
    # A claim's own paths are refused before anything is decided.
    paths = check_paths(command.paths) if command.paths else ()
    return _claim(run, command.step_id, command.actor, command.lease_seconds, renew_only=False,
                  paths=paths)


def heartbeat(run: Execution, command: c.Heartbeat) -> c.Grant:
    return _claim(run, command.step_id, command.actor, command.lease_seconds, renew_only=True)


def _claim(run: Execution, step_id: str, session_id: str, lease_seconds: int | None, *,
           renew_only: bool, paths: Sequence[PathSpec] = ()) -> c.Grant:
    """Grant, renew or refuse. A heartbeat (`renew_only`) is judged in the same decision:
    a lease that lapsed by then is NotHolder, never granted again under a new fence. A
    grant reserves the step's paths and the claim's own `paths` (ledger.reserving)."""
    lease = _lease(run, lease_seconds)

    def attempt(now: datetime, fresh: bool) -> Outcome[c.Grant]:
        session = run.live_session(session_id)
        step, definition, plan = run.step(step_id, fresh=fresh)

        def status_of(dep: StepId) -> str:
            return run.store.step(dep).status

        verdict = assess(step, definition, status_of, run.holder_ended(step, session), now)
        holding = verdict.kind in ("held", "in_review") and verdict.holder is not None
        if renew_only and not (holding and verdict.holder == session.id):
            holder = verdict.holder if holding else None
            return Outcome(Decision([], errors.NotHolder(step.id, session.id, holder)))
        if renew_only and verdict.kind == "in_review":  # a reviewer's heartbeat
            renewed = Decision([renew(step, session.id, lease, now)])
            return Outcome(renewed, review_grant(renewed, session.id, step.plan, definition))
        decision = decide_claim(step, definition, verdict, session.id, session.version,
                                lease, lambda s: plan.steps[s].title, now,
                                names=lambda s: run.store.session(s).name,
                                refs=lambda s: step_reference(plan.slug,
                                                              plan.steps[s].position))
        decision = reserve(run, decision, step, definition, session, paths, lease, now)
        granted = _grant(decision, verdict, session.id, step.plan, definition, step.notes)
        if granted is not None and granted.renewed and not paths:
            granted = with_kept(run, granted, step)
        else:
            granted = with_reserved(granted, decision)
        return Outcome(decision, with_warnings(granted, definition.paths, paths))

    return run.decide_on_cached_step(attempt, step_id)


def claim_next(run: Execution, command: c.ClaimNext) -> c.NextClaim:
    """The first ready step the session wins, tried in claim order (`CandidateView.
    claim_order`): by priority, then the step heading the longest chain of open steps
    still waiting on it (so the critical path starts first and a swarm ends sooner), then
    oldest first. A ready list keeps showing priority, then age. A bounce on a candidate
    lost to a race is recorded but is not the answer: the next candidate is tried."""
    lease = _lease(run, command.lease_seconds)
    run.live_session(command.actor)
    slug = run.store.plan(PlanSlug(command.plan)).slug
    attach = run.attach

    def as_next(outcome: Outcome[Any]) -> list[Any]:
        if attach is None or outcome.decision.refusal is not None:
            return []
        return list(attach(Outcome(outcome.decision, c.NextClaim(slug, outcome.result))))

    candidates = run.attaching(as_next)
    if command.review:
        return claim_next_review(run, command, slug, candidates)
    for step_id in run.view.claim_order(slug):
        if not _still_free(run, step_id):
            continue  # the view lagged behind another claim: a read, not an attempt
        if collides(run, step_id, command.actor, run.clock.now()):
            continue  # its paths are reserved by another session: passed by, as if held
        try:
            return c.NextClaim(slug, claim(candidates, c.Claim(step_id, command.actor, lease)))
        except (errors.AlreadyClaimed, errors.Blocked, errors.Closed, errors.PathsHeld):
            continue
    found = c.NextClaim(slug, None)
    run.append(Outcome(Decision([]), found))  # no decision: only what is attached lands
    return found


def _still_free(run: Execution, step_id: StepId) -> bool:
    """Whether the step, read fresh, is neither closed nor held by a live claim. Racing
    agents all start from the same ready list; this read lets the ones that arrive after
    a winner move on without appending a bounce (a durable write) for a step they never
    asked for. A true race (both read it free) still bounces, and is recorded."""
    step = run.store.step(step_id)
    return step.status not in SATISFYING and run.current_holder(step, run.clock.now()) is None


# --- closing a claim -------------------------------------------------------------------


def complete(run: Execution, command: c.Complete) -> c.StepChanged:
    """Done (or in review), then, with `claim_next`, the plan's next step claimed as
    claim-next claims it: the completion lands first on its own, and the answer that is
    kept for the caller's idempotency key is the whole of it, attached to the claim."""
    if not command.claim_next:
        return _complete(run, command)
    lease = _lease(run, command.lease_seconds)  # refused before the completion lands
    changed = _complete(run.attaching(None), command)
    attach = run.attach

    def as_changed(outcome: Outcome[Any]) -> list[Any]:
        found = outcome.result
        if attach is None or outcome.decision.refusal is not None:
            return []
        return list(attach(Outcome(outcome.decision, replace(changed, next=found))))

    found = claim_next(run.attaching(as_changed),
                       c.ClaimNext(changed.plan, command.actor, lease))
    return replace(changed, next=found)


def _complete(run: Execution, command: c.Complete) -> c.StepChanged:
    # The evidence is refused before anything is decided, as a claim's own paths are.
    evidence = check_evidence(command.evidence)

    def decide(step: StepState, definition: StepDef, plan: PlanState, session: SessionState,
               fence: int | None, holder: SessionId | None, now: datetime) -> Decision:
        return closing.decide_complete(step, definition, session, fence, holder, now,
                                       evidence, plan.require_checks_pass,
                                       needs_review(plan, definition))

    def status(plan: PlanState, definition: StepDef) -> Status:
        return "in_review" if needs_review(plan, definition) else "done"

    return _close(run, decide, command, status, "complete")


def release(run: Execution, command: c.Release) -> c.StepChanged:
    def decide(step: StepState, definition: StepDef, plan: PlanState, session: SessionState,
               fence: int | None, holder: SessionId | None, now: datetime) -> Decision:
        return closing.decide_release(step, definition, session, fence, holder, now,
                                      command.reason)

    return _close(run, decide, command, lambda _, __: "open", "release")


# A closing decision on the step (as of its plan) for the acting session.
DecideClose = Callable[[StepState, StepDef, PlanState, SessionState, int | None,
                        SessionId | None, datetime], Decision]


def _close(run: Execution, decide: DecideClose, command: c.Complete | c.Release,
           status: Callable[[PlanState, StepDef], Status], action: str) -> c.StepChanged:
    def attempt(now: datetime, fresh: bool) -> Outcome[c.StepChanged]:
        session = run.live_session(command.actor)
        step, definition, plan = run.step(command.step_id, fresh=fresh)
        holder = run.current_holder(step, now, session)
        decision = decide(step, definition, plan, session, command.fence, holder, now)
        decision = closing.with_note(decision, step, Actor(session.id), command.note, action,
                                     now)
        became = status(plan, definition)
        if became == "done":
            decision = with_parents_closed(run, decision, plan, definition, Actor(session.id),
                                           now)
        return Outcome(decision, c.StepChanged(step.id, step.plan, became,
                                               step_reference(plan.slug, definition.position)))

    return run.decide_on_cached_step(attempt, command.step_id)


def drop(run: Execution, command: c.Drop) -> c.StepChanged:
    who = run.author(command.actor)
    session_id = acting_session(who)
    def attempt(now: datetime) -> Outcome[c.StepChanged]:
        session = run.live_session(session_id) if session_id is not None else None
        step, definition, _ = run.step(command.step_id)
        holder = run.current_holder(step, now, session)
        decision = closing.decide_drop(step, definition, who, session, command.fence,
                                       holder, now)
        decision = closing.with_note(decision, step, who, command.note, "drop", now)
        return Outcome(decision, c.StepChanged(step.id, step.plan, "dropped",
                                               step_reference(step.plan, definition.position)))

    return run.decide(attempt, command.step_id)


def add_note(run: Execution, command: c.AddNote) -> c.NoteAdded:
    who = run.author(command.actor)

    def attempt(now: datetime) -> Outcome[c.NoteAdded]:
        step, definition, _ = run.step(command.step_id)
        noted = closing.decide_note(step, who, command.text, now)
        note = Note(who, now, noted.text)
        return Outcome(Decision([noted]), c.NoteAdded(
            step.id, step.plan, note, step_reference(step.plan, definition.position)))

    return run.decide(attempt, command.step_id)


def reopen(run: Execution, command: c.Reopen) -> c.StepChanged:
    who = run.author(command.actor)
    def attempt(now: datetime) -> Outcome[c.StepChanged]:
        step, definition, _ = run.step(command.step_id)
        return Outcome(closing.decide_reopen(step, who, now),
                       c.StepChanged(step.id, step.plan, "open",
                                     step_reference(step.plan, definition.position)))

    return run.decide(attempt, command.step_id)


def force_release(run: Execution, command: c.ForceRelease) -> c.ForceReleased:
    who = run.author(command.actor)

    def attempt(now: datetime) -> Outcome[c.ForceReleased]:
        step = run.store.step(StepId(command.step_id))
        decision = closing.decide_force_release(step, run.current_holder(step, now), who, now)
        return Outcome(decision, c.ForceReleased(step.id, bool(decision.events)))

    return run.decide(attempt, command.step_id)
