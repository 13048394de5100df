"""Admitting a recording into a store: every event checked before any is written.

A recording is untrusted input: anyone can write one, and re-hash it so that its chains
hold. Before an import writes anything, each event is decoded into its own type, every
field's type checked (replays.typed_events), then checked against the state folded from
the events before it with the domain's own rules and folds: slugs, texts and limits
(ledger.domain.plans), a plan's stream named after its slug, a step opened in the plan
that added it, dependencies known and acyclic, claims made by started sessions with a
fence that grows, closes of a step that is held or open; and every stream's hash chain
is verified (ledger.chain). The first event that breaks a rule refuses the whole file,
naming its line and why.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.persistence import Mapper, StoredEvent

from planledger.ledger.chain import Broken, Entry, verify
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import ADMIN, LOCAL_PREFIX, PlanSlug, StepId, plan_stream
from planledger.ledger.domain.plans import (
    MAX_BODY,
    MAX_DEPENDENCIES,
    MAX_STEPS_PER_PLAN,
    MAX_TITLE,
    check_constraints,
    check_slug,
    check_text,
    find_cycle,
)
from planledger.ledger.domain.state import (
    SATISFYING,
    PlanState,
    SessionState,
    StepState,
    evolve_plan,
    evolve_session,
    evolve_step,
)
from planledger.replays.format import EventRecord, RecordingError
from planledger.replays.reading import ANSWER_TOPIC
from planledger.replays.typed_events import Mistyped, decode_typed

# Session and step ids as every door takes them (api.http.deps): a stream named otherwise
# could not have been written by planledger.
ID_PATTERN = re.compile(r"^[0-9A-Za-z_-]{1,64}$")
IDEMPOTENCY_PREFIX = "idem:"


class Refused(Exception):
    """One event breaks a rule; the message says which."""


@dataclass
class _Folded:
    """The log as far as it was checked: each stream's state, by the domain's folds.
    Plan states are private to this check, so their step tables are folded in place."""

    plans: dict[str, PlanState] = field(default_factory=dict)  # by stream
    added: dict[str, PlanSlug] = field(default_factory=dict)  # step id -> its plan
    steps: dict[str, StepState] = field(default_factory=dict)
    sessions: dict[str, SessionState] = field(default_factory=dict)


def admit(mapper: Mapper[str], records: Sequence[EventRecord]) -> list[StoredEvent]:
    """The recording's events as the store keeps them, once every one is of its type, keeps
    the domain's rules and sits whole in its stream's hash chain; RecordingError naming
    the line of the first that does not."""
    folded = _Folded()
    stored = []
    for record in records:
        event = StoredEvent(record.stream, record.version, record.topic, record.state_bytes())
        try:
            decoded = decode_typed(mapper, event, record.state)
            _check(folded, record, decoded)
        except (Mistyped, Refused, errors.LedgerError) as error:
            raise _refusal(record, error) from None
        stored.append(event)
    broken = verify(Entry(r.position, r.stream, r.version, r.topic, s.state)
                    for r, s in zip(records, stored, strict=True))
    if isinstance(broken, Broken):
        line = next(r.line for r in records if r.position == broken.position)
        raise RecordingError(f"line {line}: the hash chain is broken: {broken.message}")
    return stored


def _refusal(record: EventRecord, error: Exception) -> RecordingError:
    kind = record.topic.rpartition(":")[2]
    verdict = "cannot be read" if isinstance(error, Mistyped) else "is refused"
    return RecordingError(f"line {record.line}: event {kind} at position {record.position} "
                          f"(stream {record.stream[:80]}) {verdict}: {error}")


def _check(folded: _Folded, record: EventRecord, event: object) -> None:
    if record.topic == ANSWER_TOPIC:
        if not record.stream.startswith(IDEMPOTENCY_PREFIX):
            raise Refused(f"an idempotent answer belongs in an {IDEMPOTENCY_PREFIX}… stream")
        return
    if not isinstance(event, ev.LedgerEvent):
        raise Refused("not a ledger event")
    _check_author(folded, event)
    rule = _RULES.get(type(event))
    if rule is None:
        raise Refused("no rule admits this event type")
    rule(folded, event)


def _check_author(folded: _Folded, event: ev.LedgerEvent) -> None:
    session = event.session_id
    if session is not None and session not in folded.sessions and not (
            isinstance(event, ev.SessionStarted) and session == event.originator_id):
        raise Refused(f'session_id "{session[:80]}" names no session started before it')
    actor = event.actor
    if actor is None or actor == ADMIN or ID_PATTERN.match(actor):
        return
    if actor.startswith(LOCAL_PREFIX) and len(actor) > len(LOCAL_PREFIX):
        check_text("actor", actor, MAX_TITLE, required=True)
        return
    raise Refused(f"actor {actor[:80]!r} is neither a session, the admin nor a local "
                  "operator")


# --- plans ----------------------------------------------------------------------


def _plan(folded: _Folded, event: ev.LedgerEvent) -> PlanState:
    plan = folded.plans.get(event.originator_id)
    if plan is None:
        raise Refused("its stream is no plan created before it")
    return plan


def _plan_created(folded: _Folded, event: ev.PlanCreated) -> None:
    slug = check_slug(event.slug)
    if event.originator_id != plan_stream(slug):
        raise Refused(f'plan "{slug}" must be in stream {plan_stream(slug)}')
    if event.originator_id in folded.plans:
        raise errors.PlanExists(slug)
    check_text("title", event.title, MAX_TITLE, required=True)
    check_constraints(event.constraints)
    folded.plans[event.originator_id] = evolve_plan(None, event)


def _step_added(folded: _Folded, event: ev.StepAdded) -> None:
    plan = _plan(folded, event)
    step = _step_id(event.step_id)
    if step in folded.added:
        raise Refused(f"step {step} was added before")
    if len(plan.steps) >= MAX_STEPS_PER_PLAN:
        raise errors.InvalidInput("steps", f"plan {plan.slug} has the limit of "
                                           f"{MAX_STEPS_PER_PLAN} steps")
    check_text("title", event.title, MAX_TITLE, required=True)
    check_text("body", event.body, MAX_BODY, required=False)
    _check_dependencies(plan, step, event.depends_on)
    folded.added[step] = plan.slug
    folded.plans[plan.id] = evolve_plan(plan, event)


def _step_revised(folded: _Folded, event: ev.StepRevised) -> None:
    plan = _plan(folded, event)
    if event.step_id not in plan.steps:
        raise errors.UnknownStep(event.step_id)
    if event.title is not None:
        check_text("title", event.title, MAX_TITLE, required=True)
    if event.body is not None:
        check_text("body", event.body, MAX_BODY, required=False)
    folded.plans[plan.id] = evolve_plan(plan, event)


def _dependencies_declared(folded: _Folded, event: ev.DependenciesDeclared) -> None:
    plan = _plan(folded, event)
    step = StepId(event.step_id)
    if step not in plan.steps:
        raise errors.UnknownStep(step)
    _check_dependencies(plan, step, event.depends_on)
    new = [StepId(d) for d in dict.fromkeys(event.depends_on)
           if d not in plan.steps[step].depends_on]
    if len(plan.steps[step].depends_on) + len(new) > MAX_DEPENDENCIES:
        raise errors.InvalidInput("depends_on", f"more than {MAX_DEPENDENCIES} dependencies")
    cycle = find_cycle(plan, step, new)
    if cycle:
        raise errors.DependencyCycle(cycle)
    folded.plans[plan.id] = evolve_plan(plan, event)


def _check_dependencies(plan: PlanState, step: StepId, depends_on: Sequence[str]) -> None:
    if len(depends_on) > MAX_DEPENDENCIES:
        raise errors.InvalidInput("depends_on", f"more than {MAX_DEPENDENCIES} dependencies")
    if step in depends_on:
        raise errors.SelfDependency(step)
    unknown = [d for d in dict.fromkeys(depends_on) if d not in plan.steps]
    if unknown:
        raise errors.UnknownDependency(step, unknown)


def _step_id(value: str) -> StepId:
    if not ID_PATTERN.match(value):
        raise errors.InvalidInput("step id", f"{value[:80]!r} is not 1-64 letters, digits, "
                                             "'-' or '_'")
    return StepId(value)


# --- steps ----------------------------------------------------------------------


def _step(folded: _Folded, event: ev.LedgerEvent) -> StepState:
    step = folded.steps.get(event.originator_id)
    if step is None:
        raise Refused("its stream is no step opened before it")
    return step


def _step_opened(folded: _Folded, event: ev.StepOpened) -> None:
    step = _step_id(event.originator_id)
    if step in folded.steps:
        raise Refused(f"step {step} was opened before")
    if folded.added.get(step) != event.plan:
        raise Refused(f'step {step} was not added to plan "{event.plan[:80]}"')
    folded.steps[step] = evolve_step(None, event)


def _step_claimed(folded: _Folded, event: ev.StepClaimed) -> None:
    step = _step(folded, event)
    if step.status in SATISFYING:
        raise Refused(f"step is {step.status}: it cannot be claimed")
    if event.session_id is None:
        raise Refused("a claim names the session that made it")
    if event.fence <= step.fence:
        raise Refused(f"a new grant must raise the fence above {step.fence}; "
                      f"it carries {event.fence}")
    if event.lease_seconds <= 0:
        raise errors.InvalidInput("lease_seconds", "must be positive")
    folded.steps[step.id] = evolve_step(step, event)


def _lease_renewed(folded: _Folded, event: ev.LeaseRenewed) -> None:
    step = _held(folded, event, event.fence)
    if event.session_id != step.holder:
        raise Refused(f'only the holder "{step.holder}" renews its lease')
    if event.lease_seconds <= 0:
        raise errors.InvalidInput("lease_seconds", "must be positive")
    folded.steps[step.id] = evolve_step(step, event)


def _step_released(folded: _Folded, event: ev.StepReleased) -> None:
    step = _held(folded, event, event.fence)
    if event.holder != step.holder:
        raise Refused(f'it names holder "{event.holder[:80]}"; the step is held by '
                      f'"{step.holder}"')
    folded.steps[step.id] = evolve_step(step, event)


def _step_completed(folded: _Folded, event: ev.StepCompleted) -> None:
    step = _held(folded, event, event.fence)
    folded.steps[step.id] = evolve_step(step, event)


def _step_dropped(folded: _Folded, event: ev.StepDropped) -> None:
    step = _step(folded, event)
    if event.fence is not None:
        step = _held(folded, event, event.fence)
    elif step.status in SATISFYING:
        raise Refused(f"step is {step.status} already")
    folded.steps[step.id] = evolve_step(step, event)


def _step_reopened(folded: _Folded, event: ev.StepReopened) -> None:
    step = _step(folded, event)
    if step.status not in SATISFYING:
        raise errors.NotReopenable(step.id, step.status)
    folded.steps[step.id] = evolve_step(step, event)


def _held(folded: _Folded, event: ev.LedgerEvent, fence: int) -> StepState:
    """The step, which must be in progress at `fence` (the fence of its claim)."""
    step = _step(folded, event)
    if step.status != "in_progress":
        raise Refused(f"step is {step.status}, not held")
    if fence != step.fence:
        raise Refused(f"it carries fence {fence}; the step's claim is at fence {step.fence}")
    return step


# --- sessions -------------------------------------------------------------------


def _session(folded: _Folded, event: ev.LedgerEvent) -> SessionState:
    session = folded.sessions.get(event.originator_id)
    if session is None:
        raise Refused("its stream is no session started before it")
    if session.ended:
        raise errors.SessionClosed(session.id)
    return session


def _session_started(folded: _Folded, event: ev.SessionStarted) -> None:
    if event.originator_id in folded.sessions:
        raise Refused("the session was started before")
    _step_id(event.originator_id)  # a session's id has a step id's shape
    if event.session_id != event.originator_id:
        raise Refused("a session's start names the session itself")
    if event.name is not None:
        check_text("name", event.name, MAX_BODY, required=False)
    folded.sessions[event.originator_id] = evolve_session(None, event)


def _session_ended(folded: _Folded, event: ev.SessionEnded) -> None:
    _session_event(folded, event)
    _known_steps(folded, event.released)


def _claim_bounced(folded: _Folded, event: ev.ClaimBounced) -> None:
    _session_event(folded, event)
    _known_steps(folded, [event.step_id])
    if event.holder not in folded.sessions:
        raise Refused(f'holder "{event.holder[:80]}" names no session started before it')


def _claim_refused(folded: _Folded, event: ev.ClaimRefused) -> None:
    _session_event(folded, event)
    _known_steps(folded, [event.step_id])
    check_text("detail", event.detail, MAX_BODY, required=False)


def _stale_fence_rejected(folded: _Folded, event: ev.StaleFenceRejected) -> None:
    _session_event(folded, event)
    _known_steps(folded, [event.step_id])
    if event.holder is not None and event.holder not in folded.sessions:
        raise Refused(f'holder "{event.holder[:80]}" names no session started before it')
    if event.action not in ("complete", "drop", "release"):
        raise errors.InvalidInput("action", f"{event.action[:80]!r} is not complete, drop "
                                            "or release")


def _ready_listed(folded: _Folded, event: ev.ReadyListed) -> None:
    _session_event(folded, event)
    plan = folded.plans.get(plan_stream(PlanSlug(event.plan)))
    if plan is None:
        raise errors.UnknownPlan(event.plan[:80])
    unknown = [s for s in event.step_ids if s not in plan.steps]
    if unknown:
        raise Refused(f"it lists {unknown[0][:80]}, which is no step of plan {plan.slug}")


def _session_event(folded: _Folded, event: ev.LedgerEvent) -> None:
    session = _session(folded, event)
    folded.sessions[session.id] = evolve_session(session, event)


def _known_steps(folded: _Folded, steps: Sequence[str]) -> None:
    unknown = [s for s in steps if s not in folded.steps]
    if unknown:
        raise errors.UnknownStep(unknown[0][:80])


# Each rule takes the event type it is filed under.
_RULES: dict[type[ev.LedgerEvent], Callable[[_Folded, Any], None]] = {
    ev.PlanCreated: _plan_created, ev.StepAdded: _step_added,
    ev.StepRevised: _step_revised, ev.DependenciesDeclared: _dependencies_declared,
    ev.StepOpened: _step_opened, ev.StepClaimed: _step_claimed,
    ev.LeaseRenewed: _lease_renewed, ev.StepReleased: _step_released,
    ev.StepCompleted: _step_completed, ev.StepDropped: _step_dropped,
    ev.StepReopened: _step_reopened, ev.SessionStarted: _session_started,
    ev.SessionEnded: _session_ended, ev.ClaimBounced: _claim_bounced,
    ev.ClaimRefused: _claim_refused, ev.StaleFenceRejected: _stale_fence_rejected,
    ev.ReadyListed: _ready_listed,
}
