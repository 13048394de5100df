"""Handlers of sessions and of a plan's structure (its steps and their dependencies)."""

from __future__ import annotations  # attempts are defined per command: not evaluated

from collections.abc import Sequence
from datetime import datetime

from planledger.ledger import commands as c
from planledger.ledger.domain import access, closing, errors, relations
from planledger.ledger.domain import events as ev
from planledger.ledger.domain import plans as plan_rules
from planledger.ledger.domain.claims import Decision
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.references import step_reference
from planledger.ledger.domain.reservations import decide_declare_paths, with_declared_paths
from planledger.ledger.domain.state import (
    PlanState,
    SessionState,
    evolve_plan,
    fold_plan,
    fold_session,
)
from planledger.ledger.execution import Execution, Outcome
from planledger.ledger.store import ConflictError
from planledger.ledger.turns import each_in_turns

# --- sessions --------------------------------------------------------------------------


def start_session(run: Execution, command: c.StartSession) -> SessionState:
    name = command.session_name
    if name is not None:
        plan_rules.check_line("name", name, plan_rules.MAX_TITLE, required=False)
    for field, said in (("cwd", command.cwd), ("source", command.source),
                        ("model", command.model)):
        if said is not None:
            plan_rules.check_line(field, said, plan_rules.MAX_WHERE, required=False)
    role = None if command.role is None else access.check_role(command.role)
    key = None if command.key is None else access.check_key_name(command.key)
    session_id = SessionId(run.ids.new_id())
    started = ev.SessionStarted(session_id, 1, timestamp=run.clock.now(),
                                session_id=session_id, actor=session_id, name=name or None,
                                cwd=command.cwd or None, source=command.source or None,
                                model=command.model or None, key=key, role=role)
    session = fold_session(None, [started])
    assert session is not None
    run.append(Outcome(Decision([started]), session))
    return session


def end_session(run: Execution, command: c.EndSession) -> c.SessionEnded:
    """End the session and release, each as its own event, every step it holds."""
    if command.findings is not None:
        plan_rules.check_text("findings", command.findings, plan_rules.MAX_BODY,
                              required=False)
    # The read model catches up here, before the write transaction: its first read can
    # fold the whole log, and on SQLite every other writer would wait for it. Inside,
    # it is asked again and adds only what landed since.
    run.view.held_by(SessionId(command.actor))

    def attempt(now: datetime) -> Outcome[c.SessionEnded]:
        session = run.store.session(SessionId(command.actor))
        held = [run.store.step(s) for s in run.view.held_by(session.id)]
        decision = closing.decide_end_session(session, held, now, command.findings)
        released = tuple(StepId(e.originator_id) for e in decision.events[:-1])
        return Outcome(decision, c.SessionEnded(session.id, released))

    return run.decide(attempt, command.actor)


def list_ready(run: Execution, command: c.ListReady) -> c.ReadyListed:
    """The plan's ready steps as the session is shown them, recorded (`ReadyListed`) so
    a timeline and a replay show what each agent chose from."""
    slug = run.store.plan(PlanSlug(command.plan)).slug
    # Read before the write transaction: a read model's first read can fold the whole
    # log, and on SQLite every other writer would wait for it.
    ready = run.view.ready(slug)
    shown = tuple(ready if command.limit is None else ready[:max(0, command.limit)])

    def attempt(now: datetime) -> Outcome[c.ReadyListed]:
        session = run.live_session(command.actor)
        listed = ev.ReadyListed(session.id, session.version + 1, timestamp=now,
                                session_id=session.id, actor=session.id, plan=slug,
                                step_ids=list(shown))
        return Outcome(Decision([listed]),
                       c.ReadyListed(slug, shown, command.limit, session.id))

    return run.decide(attempt, command.actor)


# --- plans and steps -------------------------------------------------------------------


def create_plan(run: Execution, command: c.CreatePlan) -> c.PlanCreated:
    """The plan and its steps in one append; a taken slug is PlanExists, nothing written."""
    who = run.author(command.actor)
    now = run.clock.now()
    created = plan_rules.decide_create_plan(command.slug, command.title,
                                            dict(command.constraints), who, now,
                                            command.require_checks_pass,
                                            command.review_required)
    plan = evolve_plan(None, created)
    events: list[ev.LedgerEvent] = [created]
    keys: dict[str, StepId] = {}
    arrived_done: set[StepId] = set()
    for new in each_in_turns(command.steps):  # a long plan lets claims run between steps
        step_id = StepId(run.ids.new_id())
        deps = [keys.get(d, StepId(d)) for d in new.depends_on]
        parent = _own(keys, new.parent)
        if parent in plan.steps:  # else decide_add_step refuses it
            relations.check_arrives_done(plan, StepId(parent), arrived_done, new.done,
                                         new.key or None)
        added, opened = plan_rules.decide_add_step(
            plan, plan.version + 1, step_id, new.title, new.body, deps, who, now,
            new.priority, new.review_required, new.key or None, keys,
            parent=parent, discovered_from=_own(keys, new.discovered_from),
            labels=new.labels, links=new.links,
            elsewhere=_elsewhere(run, plan, (parent, _own(keys, new.discovered_from))))
        plan = evolve_plan(plan, added)  # our own fresh table: no copy needed
        events += [added, opened]
        if new.paths:
            declared = decide_declare_paths(plan, step_id, new.paths, plan.version + 1, who,
                                            now)
            plan = evolve_plan(plan, declared)
            events.append(declared)
        events += closing.decide_arrival(step_id, new.done, new.note, who, now)
        if new.done:
            arrived_done.add(step_id)
        if new.key:
            keys[new.key] = step_id
    # The plan as folded here is the plan as stored: not read back (a thousand steps are
    # tens of milliseconds of CPU that other requests wait for).
    made = c.PlanCreated(plan, tuple(StepId(e.step_id) for e in events
                                     if isinstance(e, ev.StepAdded)),
                         tuple(new.key for new in command.steps))
    try:
        run.append(Outcome(Decision(events), made))
    except ConflictError:
        raise errors.PlanExists(plan.slug) from None
    return made


def _status_under(run: Execution, plan: PlanState, parent: str | None, now: datetime) -> str:
    """The status of the parent a new child names, as a child sees it: a claim whose lease
    ran out holds nothing, so its step is open (a parent not of the plan: "open", and
    decide_add_step refuses it)."""
    if parent is None or StepId(parent) not in plan.steps:
        return "open"
    state = run.store.step(StepId(parent))
    if state.status == "in_progress" and run.current_holder(state, now) is None:
        return "open"
    return state.status


def _elsewhere(run: Execution, plan: PlanState,
               named: Sequence[str | None]) -> dict[str, tuple[str, str]]:
    """The steps of other plans among `named` (ids), as (reference, plan): a refusal says
    where they are rather than that nothing is there."""
    found: dict[str, tuple[str, str]] = {}
    for step_id in named:
        if step_id is None or StepId(step_id) in plan.steps:
            continue
        try:
            state = run.store.step(StepId(step_id))
            other = run.store.plan(state.plan)
        except errors.LedgerError:  # names no step at all: refused as such
            continue
        found[step_id] = (step_reference(other.slug, other.steps[state.id].position),
                          other.slug)
    return found


def _own(keys: dict[str, StepId], named: str | None) -> str | None:
    """A step a new plan's step names: the key of an earlier step of the request, or an
    existing step's id."""
    return None if named is None else keys.get(named, StepId(named))


def _defined(plan: PlanState, event: ev.LedgerEvent, step_id: StepId) -> c.StepDefined:
    """The step as the plan defines it once `event` lands: folded (on a copy of the
    plan's table, which the store's cache shares), not read back."""
    after = fold_plan(plan, [event])
    assert after is not None
    return c.StepDefined(after.slug, after.steps[step_id])


def _defined_by(plan: PlanState, events: Sequence[ev.LedgerEvent],
                step_id: StepId) -> c.StepDefined:
    """`_defined`, once several events land (the plan's; a step's own stream passes by)."""
    after = fold_plan(plan, [e for e in events if e.originator_id == plan.id])
    assert after is not None
    return c.StepDefined(after.slug, after.steps[step_id])


def add_step(run: Execution, command: c.AddStep) -> c.StepDefined:
    who = run.author(command.actor)
    step_id = StepId(run.ids.new_id())

    def attempt(now: datetime) -> Outcome[c.StepDefined]:
        plan = run.store.plan(PlanSlug(command.plan))
        added, opened = plan_rules.decide_add_step(
            plan, plan.version + 1, step_id, command.title, command.body,
            command.depends_on, who, now, command.priority, command.review_required,
            command.key or None, parent=command.parent,
            discovered_from=command.discovered_from, labels=command.labels,
            links=command.links, parent_status=_status_under(run, plan, command.parent, now),
            elsewhere=_elsewhere(run, plan, (command.parent, command.discovered_from)))
        events: list[ev.LedgerEvent] = [added, opened]
        if command.paths:
            after = fold_plan(plan, [added])
            assert after is not None
            events.append(decide_declare_paths(after, step_id, command.paths,
                                               added.originator_version + 1, who, now))
        events += closing.decide_arrival(step_id, command.done, command.note, who, now)
        return Outcome(Decision(events), _defined_by(plan, events, step_id))

    return run.decide(attempt, command.plan)


def revise_step(run: Execution, command: c.ReviseStep) -> c.StepDefined:
    who = run.author(command.actor)
    step_id = StepId(command.step_id)

    def attempt(now: datetime) -> Outcome[c.StepDefined]:
        step, _, plan = run.step(step_id)
        holder = run.current_holder(step, now)
        name = run.store.session(holder).name if holder is not None else None
        revised = plan_rules.decide_revise_step(plan, step_id, command.title, command.body,
                                                who, now, holder, name, command.priority)
        events = with_declared_paths(plan, revised, command.paths, who, now)
        return Outcome(Decision(events), _defined_by(plan, events, step_id))

    return run.decide(attempt, command.step_id)


def declare_dependencies(run: Execution, command: c.DeclareDependencies) -> c.StepDefined:
    """Add dependencies; the plan's version serializes concurrent declarations, so two
    declarations that would close a cycle together cannot both land."""
    who = run.author(command.actor)
    step_id = StepId(command.step_id)

    def attempt(now: datetime) -> Outcome[c.StepDefined]:
        step, _, plan = run.step(step_id)
        holder = run.current_holder(step, now)
        name = run.store.session(holder).name if holder is not None else None
        declared = plan_rules.decide_declare_dependencies(plan, step_id, command.depends_on,
                                                          who, now, holder, name)
        return Outcome(Decision([declared]), _defined(plan, declared, step_id))

    return run.decide(attempt, command.step_id)
