"""Admitting a recording into a store: every event checked before any is written.

A recording is untrusted input: anyone can write one, and re-hash it so that its chains
hold. Before an import writes anything, each event is decoded into its own type, every
field's type checked (replays.typed_events), then checked against the state folded from
the events before it with the domain's own rules and folds: slugs, texts and limits
(ledger.domain.plans), a plan's stream named after its slug, a step opened in the plan
that added it, dependencies known and acyclic; claims and closes judged by the domain's
own claim rule (ledger.domain.claims) at the event's own time: a claim only of a step
claimable then, by a live session, its lease ending `lease_seconds` after it; a renewal,
completion, release or drop only by the step's live holder at its fence (or, for a
forced release or an unheld drop, by an operator). Every event is dated no later than
now (give or take `CLOCK_TOLERANCE`), and names its author (a started, live session, the
admin or a local operator), except in a recording in which no event names any: one
written before 0.2.0, when events carried no actor. Every stream's hash chain is verified
(ledger.chain). The first event that breaks a rule refuses the whole file, naming its line
and why.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from eventsourcing.persistence import StoredEvent

from planledger.ledger.chain import Broken, Entry, verify
from planledger.ledger.domain import access, errors, relations
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.access import KeyState
from planledger.ledger.domain.claims import assess, check_lease, live_holder, reviewer
from planledger.ledger.domain.evidence import Evidence, check_evidence
from planledger.ledger.domain.ids import (
    ADMIN,
    KEY_ACTOR_PREFIX,
    LOCAL_PREFIX,
    PlanSlug,
    StepId,
    plan_stream,
)
from planledger.ledger.domain.paths import PathSpec, check_paths
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
from planledger.ledger.domain.references import check_key
from planledger.ledger.domain.reservations import (
    RESERVATIONS_STREAM,
    Reservation,
    conflicts,
    note_reserved,
    specs,
)
from planledger.ledger.domain.review import check_verdict, needs_review, own_work
from planledger.ledger.domain.state import (
    SATISFYING,
    Link,
    PlanState,
    SessionState,
    StepState,
    evolve_plan,
    evolve_session,
    evolve_step,
)
from planledger.ledger.notification_log import Decoder
from planledger.replays.format import EventRecord, RecordingError
from planledger.replays.reading import ANSWER_TOPIC
from planledger.replays.typed_events import Mistyped, decode_typed

# Session and step ids as every door takes them (api.http.deps): a stream named otherwise
# could not have been written by planledger.
ID_PATTERN = re.compile(r"^[0-9A-Za-z_-]{1,64}$")
IDEMPOTENCY_PREFIX = "idem:"
# How far past this machine's clock an event may be dated: clocks of the machines that
# wrote a recording drift a little. More would floor the store's clock in the future
# (infra.clock_ids never runs it earlier than the log's newest event).
CLOCK_TOLERANCE = timedelta(minutes=5)


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
    # False for a recording from before 0.2.0: no event in it names an actor.
    actors_named: bool = True
    # Each step's latest path reservation, as the reservations stream folds them.
    reservations: dict[StepId, Reservation] = field(default_factory=dict)
    keys: dict[str, KeyState] = field(default_factory=dict)  # by name


def admit(decoder: Decoder, records: Sequence[EventRecord],
          now: datetime | None = None) -> list[StoredEvent]:
    """The recording's events as the store keeps them, once every one is of its type, keeps
    the domain's rules and sits whole in its stream's hash chain; RecordingError naming
    the line of the first that does not. `now`: this machine's time (the clock's)."""
    latest = (now or datetime.now(UTC)) + CLOCK_TOLERANCE
    folded = _Folded(actors_named=any(r.state.get("actor") is not None for r in records))
    stored = []
    for record in records:
        if record.time > latest:
            raise RecordingError(
                f"line {record.line}: event {record.topic.rpartition(':')[2]} at position "
                f"{record.position} is dated {record.time.isoformat()}, after now "
                f"({latest.isoformat()} with {CLOCK_TOLERANCE} allowed for clocks)")
        event = StoredEvent(record.stream, record.version, record.topic, record.state_bytes())
        try:
            decoded = decode_typed(decoder, event, record.state)
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
    rule = _RULES.get(type(event))
    if rule is None:
        raise Refused("no rule admits this event type")
    try:  # judged before the event folds in, told after its own rule: that one says more
        _check_author(folded, event)
    except (Refused, errors.LedgerError) as error:
        rule(folded, event)
        raise error from None
    rule(folded, event)


def _check_author(folded: _Folded, event: ev.LedgerEvent) -> None:
    session = event.session_id
    if session is not None and session not in folded.sessions and not (
            isinstance(event, ev.SessionStarted) and session == event.originator_id):
        raise Refused(f'session_id "{session[:80]}" names no session started before it')
    actor = event.actor
    if actor is None:
        if folded.actors_named:
            raise Refused("it names no actor: from 0.2.0 on every event names its author "
                          "(only a recording in which no event names one is read as one "
                          "from before 0.2.0)")
        return
    if actor == ADMIN:
        return
    if ID_PATTERN.match(actor):
        started = folded.sessions.get(actor)
        if started is None and not (isinstance(event, ev.SessionStarted)
                                    and actor == event.originator_id):
            raise Refused(f'actor "{actor}" names no session started before it')
        if started is not None and started.ended:
            raise errors.SessionClosed(started.id)
        return
    if actor.startswith(KEY_ACTOR_PREFIX):
        if actor.removeprefix(KEY_ACTOR_PREFIX) not in folded.keys:
            raise Refused(f'actor "{actor[:80]}" names no key issued before it')
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
    if event.key is not None and any(
            d.key == check_key(event.key) for d in plan.steps.values()):
        raise Refused(f"key {event.key!r} names another step of plan {plan.slug} already")
    _check_dependencies(plan, step, event.depends_on)
    _check_relations(plan, step, event)
    folded.added[step] = plan.slug
    folded.plans[plan.id] = evolve_plan(plan, event)


def _check_relations(plan: PlanState, step: StepId, event: ev.StepAdded) -> None:
    """A new step's relations as the ledger checks them (ledger.domain.relations): its
    parent and origin steps of the plan, no cycle through its parent, labels and links
    within bounds and as the ledger keeps them."""
    parent = relations.check_related(plan, "parent", _related(event.parent))
    relations.check_related(plan, "discovered_from", _related(event.discovered_from))
    cycle = relations.parent_cycle(plan, step, parent, [StepId(d) for d in event.depends_on])
    if cycle:
        raise errors.DependencyCycle(cycle)
    if event.labels is not None and relations.check_labels(event.labels) != event.labels:
        raise Refused("its labels are not as the ledger keeps them (each once)")
    if event.links is not None:
        links = [Link(str(k.get("kind")), str(k.get("target"))) for k in event.links]
        if relations.check_links(links) != event.links:
            raise Refused("its links are not as the ledger keeps them (a kind and a target)")


def _related(value: str | None) -> StepId | None:
    return None if value is None else StepId(value)


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
    _live(folded, event.session_id)
    if event.fence <= step.fence:
        raise Refused(f"a new grant must raise the fence above {step.fence}; "
                      f"it carries {event.fence}")
    _check_lease_end(event.timestamp, event.lease_seconds, event.expires_at)
    plan = folded.plans[plan_stream(step.plan)]
    definition = plan.steps[step.id]
    verdict = assess(step, definition, _status_of(folded), _holder_ended(folded, step),
                     event.timestamp)
    if verdict.kind == "held":
        raise Refused(f'the step is held by "{verdict.holder}" under a live lease at '
                      f"{event.timestamp.isoformat()}")
    if verdict.kind == "blocked":
        raise errors.Blocked(step.id, definition.title,
                             [(b, plan.steps[b].title, status) for b, status in verdict.blockers])
    if verdict.kind in ("closed", "in_review"):
        raise Refused(f"step is {step.status}: it cannot be claimed")
    folded.steps[step.id] = evolve_step(step, event)


def _lease_renewed(folded: _Folded, event: ev.LeaseRenewed) -> None:
    step = _held_live(folded, event, event.fence, event.session_id)
    # A heartbeat never shortens a lease (ledger.domain.claims.decide_claim): it ends
    # `lease_seconds` from now, or when the lease it renews ended if that is later.
    _check_lease_end(event.timestamp, event.lease_seconds, event.expires_at,
                     kept=step.expires_at)
    folded.steps[step.id] = evolve_step(step, event)


def _step_released(folded: _Folded, event: ev.StepReleased) -> None:
    if event.reason == "forced":  # an operator's: the claim may be live or lapsed
        step = _held(folded, event, event.fence)
    else:
        step = _held_live(folded, event, event.fence, event.session_id)
    if event.holder != step.holder:
        raise Refused(f'it names holder "{event.holder[:80]}"; the step is held by '
                      f'"{step.holder}"')
    folded.steps[step.id] = evolve_step(step, event)


def _closed_unheld(folded: _Folded, event: ev.StepCompleted) -> None:
    """A step done with no claim (ledger.domain.relations): one that arrived done, right
    after its StepOpened, or a parent all it waits on (its dependencies and its children)
    done or dropped, open, unheld and not requiring a review, at its current fence."""
    step = _step(folded, event)
    plan = folded.plans[plan_stream(step.plan)]
    if event.evidence is not None:
        raise Refused("a step closed with no claim carries no evidence")
    if event.reason == "created":
        if step.version != 1 or event.fence != 0:
            raise Refused("a step arrives done only in the write that opens it")
    else:
        if step.status != "open" or event.fence != step.fence:
            raise Refused(f"step is {step.status}: only an open, unheld parent closes itself")
        definition = plan.steps[step.id]
        status = _status_of(folded)
        if not definition.children or any(status(w) not in SATISFYING
                                          for w in definition.waits_on):
            raise Refused("a parent closes itself only once all it waits on (dependencies "
                          "and children) is done or dropped")
        if needs_review(plan, definition):
            raise Refused("a parent that requires a review never closes itself")
    folded.steps[step.id] = evolve_step(step, event)


def _step_completed(folded: _Folded, event: ev.StepCompleted | ev.StepSubmitted) -> None:
    """A completion, or a submission for review: by the live holder at its fence, with
    evidence as the ledger keeps it; which of the two the step's review setting says."""
    if isinstance(event, ev.StepCompleted) and event.reason is not None:
        _closed_unheld(folded, event)
        return
    step = _held_live(folded, event, event.fence, event.session_id)
    plan = folded.plans[plan_stream(step.plan)]
    if needs_review(plan, plan.steps[step.id]) != isinstance(event, ev.StepSubmitted):
        raise Refused("the step needs a review: its completion is a submission"
                      if isinstance(event, ev.StepCompleted) else
                      "the step needs no review: its completion makes it done")
    if event.evidence is not None:
        # Checked as a completion's evidence is (ledger.domain.evidence), and kept as the
        # ledger keeps it: the console, the timelines and `planledger step` read it so.
        kept = check_evidence(Evidence.of_record(event.evidence))
        if kept is None or kept.as_record() != event.evidence:
            raise Refused("its evidence is not as the ledger keeps it (every field, shas "
                          "in lower case and each once, nothing empty)")
        failed = kept.first_failed()
        if failed is not None and plan.require_checks_pass:
            raise errors.CheckFailed(step.id, step.plan, failed.name)
    folded.steps[step.id] = evolve_step(step, event)


def _in_review_for(folded: _Folded, event: ev.LedgerEvent) -> StepState:
    """The step, in review, and the event's session one that may review it (live, not its
    author nor of its author's key, and no other reviewer holding it then)."""
    step = _step(folded, event)
    if step.status != "in_review":
        raise errors.NotInReview(step.id, step.status)
    if event.session_id is None:
        raise Refused("a review names the session that made it")
    session = _live(folded, event.session_id)
    author = folded.sessions.get(step.author) if step.author else None
    own = own_work(step, session, author)
    if own is not None:
        raise own
    current = reviewer(step, event.timestamp, _holder_ended(folded, step))
    if current is not None and current != session.id:
        raise Refused(f'the step is being reviewed by "{current}" under a live lease')
    return step


def _review_claimed(folded: _Folded, event: ev.ReviewClaimed) -> None:
    step = _in_review_for(folded, event)
    if event.fence != step.fence + 1:
        raise Refused(f"it carries fence {event.fence}; a claim to review takes fence "
                      f"{step.fence + 1}")
    _check_lease_end(event.timestamp, event.lease_seconds, event.expires_at)
    folded.steps[step.id] = evolve_step(step, event)


def _step_reviewed(folded: _Folded, event: ev.StepReviewed) -> None:
    step = _in_review_for(folded, event)
    if event.fence != step.fence or event.author != step.author:
        raise Refused("its fence and author are not the step's in review")
    check_verdict(event.verdict)
    folded.steps[step.id] = evolve_step(step, event)


def _review_refused(folded: _Folded, event: ev.ReviewRefused) -> None:
    _session_event(folded, event)
    _known_steps(folded, [event.step_id])
    check_text("detail", event.detail, MAX_BODY, required=False)


def _step_dropped(folded: _Folded, event: ev.StepDropped) -> None:
    step = _step(folded, event)
    if event.fence is not None:
        step = _held_live(folded, event, event.fence, event.session_id)
    elif step.status in SATISFYING:
        raise Refused(f"step is {step.status} already")
    elif live_holder(step, event.timestamp, _holder_ended(folded, step)) is not None:
        raise Refused(f'the step is held by "{step.holder}": only its holder drops it')
    folded.steps[step.id] = evolve_step(step, event)


def _held_live(folded: _Folded, event: ev.LedgerEvent, fence: int,
               session: str | None) -> StepState:
    """The step, held at `fence` by `session`, live, under a lease live at the event's
    time: what the domain asks of whoever closes a claim (ledger.domain.closing)."""
    step = _held(folded, event, fence)
    if session is None:
        raise Refused("it names no session: only the step's holder does this")
    _live(folded, session)
    ended = _holder_ended(folded, step)
    holder = (live_holder(step, event.timestamp, ended)
              or reviewer(step, event.timestamp, ended))
    if holder != session:
        held = f'held by "{holder}"' if holder else "held by no live lease"
        raise Refused(f'session "{session[:80]}" does not hold the step at '
                      f"{event.timestamp.isoformat()}: it is {held}")
    return step


def _check_lease_end(at: datetime, lease_seconds: int, expires_at: datetime,
                     kept: datetime | None = None) -> None:
    check_lease(lease_seconds)
    ends = at + timedelta(seconds=lease_seconds)
    if kept is not None and kept > ends:
        ends = kept
    if expires_at != ends:
        raise Refused(f"its lease of {lease_seconds} s from {at.isoformat()} cannot end at "
                      f"{expires_at.isoformat()}")


def _status_of(folded: _Folded) -> Callable[[StepId], str]:
    def status(step: StepId) -> str:
        found = folded.steps.get(step)
        return found.status if found is not None else "open"
    return status


def _holder_ended(folded: _Folded, step: StepState) -> bool:
    holder = folded.sessions.get(step.holder) if step.holder is not None else None
    return holder is not None and holder.ended


def _live(folded: _Folded, session_id: str) -> SessionState:
    session = folded.sessions.get(session_id)
    if session is None:
        raise Refused(f'session "{session_id[:80]}" was not started before it')
    if session.ended:
        raise errors.SessionClosed(session.id)
    return session


def _step_noted(folded: _Folded, event: ev.StepNoted) -> None:
    step = _step(folded, event)
    folded.steps[step.id] = evolve_step(step, event)


def _step_reopened(folded: _Folded, event: ev.StepReopened) -> None:
    step = _step(folded, event)
    if step.status not in SATISFYING:
        raise errors.NotReopenable(step.id, step.status)
    if event.reason == "child_reopened":
        children = folded.plans[plan_stream(step.plan)].steps[step.id].children
        status = _status_of(folded)
        if step.status != "done" or all(status(c) in SATISFYING for c in children):
            raise Refused("a parent reopens with no command of its own only when done with "
                          "a child just reopened")
    folded.steps[step.id] = evolve_step(step, event)


def _held(folded: _Folded, event: ev.LedgerEvent, fence: int) -> StepState:
    """The step, which must be in progress at `fence` (the fence of its claim), or held
    in review by a reviewer for a renewal of the reviewer's lease."""
    step = _step(folded, event)
    reviewed = step.status == "in_review" and isinstance(event, ev.LeaseRenewed)
    if step.status != "in_progress" and not reviewed:
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
    if event.role is not None:
        access.check_role(event.role)
    if event.key is not None and event.key not in folded.keys:
        raise Refused(f'key "{event.key[:80]}" names no key issued before it')
    folded.sessions[event.originator_id] = evolve_session(None, event)


def _key_issued(folded: _Folded, event: ev.KeyIssued) -> None:
    """An issue the domain would have decided: its own stream, a valid name, role and
    digest, and no live key of the name."""
    known = folded.keys.get(event.name)
    decided = access.decide_issue_key(known, event.name, event.role, event.digest,
                                      event.timestamp, event.actor or "")
    if (event.originator_id, event.originator_version) != (
            decided.originator_id, decided.originator_version):
        raise Refused(f'a key issue belongs in stream "{decided.originator_id[:80]}" at '
                      f"version {decided.originator_version}")
    folded.keys[event.name] = access.evolve_key(known, event)


def _key_revoked(folded: _Folded, event: ev.KeyRevoked) -> None:
    known = folded.keys.get(event.name)
    decided = access.decide_revoke_key(known, event.name, event.timestamp, event.actor or "")
    if event.originator_id != decided.originator_id:
        raise Refused(f'a key revocation belongs in stream "{decided.originator_id[:80]}"')
    folded.keys[event.name] = access.evolve_key(known, event)


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


# --- path reservations ------------------------------------------------------------


def _declared_paths(carried: list[dict[str, str]]) -> tuple[PathSpec, ...]:
    """Paths as an event carries them, once they are as the ledger would have declared
    them: valid, normalized, once each."""
    paths = specs(carried)
    if check_paths(paths) != paths:
        raise Refused("its paths are not as the ledger declares them (normalized, each "
                      "pattern once, exclusive or shared)")
    return paths


def _paths_declared(folded: _Folded, event: ev.PathsDeclared) -> None:
    plan = _plan(folded, event)
    if event.step_id not in plan.steps:
        raise errors.UnknownStep(event.step_id)
    _declared_paths(event.paths)
    folded.plans[plan.id] = evolve_plan(plan, event)


def _paths_reserved(folded: _Folded, event: ev.PathsReserved) -> None:
    """A reservation: by the step's live holder at its claim's fence, of valid paths that
    meet no other session's live reservation, forgetting only reservations no longer live."""
    if event.originator_id != RESERVATIONS_STREAM:
        raise Refused(f"a reservation belongs in the {RESERVATIONS_STREAM} stream")
    step = folded.steps.get(event.step_id)
    if step is None or step.status != "in_progress" or step.fence != event.fence:
        raise Refused(f"step {event.step_id[:80]} is not held at fence {event.fence}")
    if live_holder(step, event.timestamp, _holder_ended(folded, step)) != event.session_id:
        raise Refused(f"the step's live holder at {event.timestamp.isoformat()} is not the "
                      "session reserving its paths")
    paths = _declared_paths(event.paths)
    if not paths:
        raise Refused("it reserves no paths")
    live = [r for r in folded.reservations.values() if (held := folded.steps.get(r.step_id))
            is not None and r.live(held, event.timestamp, _holder_ended(folded, held))]
    if any(r.step_id in event.freed for r in live if r.step_id != step.id):
        raise Refused("it forgets a reservation that is still live")
    others = [r for r in live if r.session != event.session_id and r.step_id != step.id]
    clash = conflicts(paths, others)
    if clash:
        held_by, patterns = clash[0]
        raise Refused(f'its paths meet "{patterns[0]}", reserved by the live claim of '
                      f'"{held_by.session}" on step {held_by.step_id}')
    note_reserved(folded.reservations, event)


def _paths_bounced(folded: _Folded, event: ev.PathsBounced) -> None:
    _session_event(folded, event)
    _known_steps(folded, [event.step_id, *(str(c.get("step_id")) for c in event.conflicts)])
    check_lease(event.lease_seconds)
    _declared_paths(event.paths)
    unknown = [c.get("holder") for c in event.conflicts if c.get("holder") not in
               folded.sessions]
    if unknown or not event.conflicts:
        raise Refused("its conflicts name no session started before it")


# Each rule takes the event type it is filed under.
_RULES: dict[type[ev.LedgerEvent], Callable[[_Folded, Any], None]] = {
    ev.PlanCreated: _plan_created, ev.StepAdded: _step_added,
    ev.StepRevised: _step_revised, ev.DependenciesDeclared: _dependencies_declared,
    ev.StepOpened: _step_opened, ev.StepClaimed: _step_claimed,
    ev.LeaseRenewed: _lease_renewed, ev.StepReleased: _step_released,
    ev.StepCompleted: _step_completed, ev.StepSubmitted: _step_completed,
    ev.ReviewClaimed: _review_claimed, ev.StepReviewed: _step_reviewed,
    ev.ReviewRefused: _review_refused, ev.StepDropped: _step_dropped,
    ev.StepReopened: _step_reopened, ev.SessionStarted: _session_started,
    ev.SessionEnded: _session_ended, ev.ClaimBounced: _claim_bounced,
    ev.ClaimRefused: _claim_refused, ev.StaleFenceRejected: _stale_fence_rejected,
    ev.ReadyListed: _ready_listed, ev.StepNoted: _step_noted,
    ev.PathsDeclared: _paths_declared, ev.PathsReserved: _paths_reserved,
    ev.PathsBounced: _paths_bounced, ev.KeyIssued: _key_issued, ev.KeyRevoked: _key_revoked,
}
