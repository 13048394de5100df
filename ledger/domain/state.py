"""State folded from events: one `evolve` per stream, one branch per event type.

States are immutable once published: the aggregate cache shares them between threads,
so a fold always works on a fresh copy.
"""

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import ClassVar, Literal

from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.paths import PathSpec

# "in_review": finished by its holder, waiting for a review (ledger.domain.review); it
# does not satisfy its dependents until a reviewer approves it.
Status = Literal["open", "in_progress", "in_review", "done", "dropped"]
SATISFYING: frozenset[str] = frozenset({"done", "dropped"})


DEFAULT_PRIORITY = 2  # a step's priority when none is given (0 highest .. 4)


@dataclass(frozen=True)
class Link:
    """A relation of a step kept as it was given (beads' `related`, `duplicates`, ...):
    `kind` names it, `target` is text the ledger does not resolve (ledger.domain.relations)."""

    kind: str
    target: str


@dataclass(frozen=True)
class StepDef:
    """What a step is: its place in the plan, its words and what it waits on."""

    id: StepId
    position: int
    title: str
    body: str
    depends_on: tuple[StepId, ...]
    added_at: datetime
    paths: tuple[PathSpec, ...] = ()  # what it will touch, reserved while it is claimed
    priority: int = DEFAULT_PRIORITY  # 0 highest .. 4; ready lists order by it, then age
    review_required: bool = False  # its completion waits for a review (or its plan's does)
    key: str | None = None  # its name within the plan, unique there (`plan/key`)
    # Relations (ledger.domain.relations): the step it belongs under (an epic of the same
    # plan), the step it was found while working on, free labels, other links as given.
    parent: StepId | None = None
    discovered_from: StepId | None = None
    labels: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    # The steps whose parent it is, oldest first: it waits on them as on its dependencies.
    children: tuple[StepId, ...] = ()

    @property
    def waits_on(self) -> tuple[StepId, ...]:
        """What must be done or dropped before the step can be claimed: its dependencies,
        then its children (a parent waits on its open children)."""
        return self.depends_on + self.children if self.children else self.depends_on


@dataclass(frozen=True)
class PlanState:
    """A plan as its events left it."""

    id: str
    version: int
    slug: PlanSlug
    title: str
    constraints: dict[str, str]
    created_at: datetime
    steps: dict[StepId, StepDef] = field(default_factory=dict)
    # A planner's setting: a completion whose evidence reports a failed check is refused.
    require_checks_pass: bool = False
    # A planner's setting: every step's completion waits for a review by another key.
    review_required: bool = False
    # The steps with children (epics), in the order they got their first: what a
    # completion looks through for a parent it may close, without reading every step.
    parents: tuple[StepId, ...] = ()


@dataclass(frozen=True)
class Note:
    """A handoff note as the next claimer reads it."""

    by: str | None  # the author: a session, the admin or the local operator
    at: datetime
    text: str
    after: str | None = None  # the close it came with, if any


@dataclass(frozen=True)
class StepState:
    """A step as its events left it."""

    id: StepId
    version: int
    plan: PlanSlug
    status: Status = "open"
    holder: SessionId | None = None
    fence: int = 0
    expires_at: datetime | None = None
    lease_seconds: int = 0
    notes: tuple[Note, ...] = ()  # left since the step was last claimed
    # In review: the session that finished the work (a reviewer must be another key's).
    author: SessionId | None = None


@dataclass(frozen=True)
class StepSnapshot:
    """A step's folded state at a version, so a long-heartbeated step loads in O(1) events.
    Kept beside the log (never in it): replays and exports see only real events."""

    TOPIC: ClassVar[str] = "ledger.domain.state:StepSnapshot"  # see events.TOPIC_PREFIX

    originator_id: str
    originator_version: int
    timestamp: datetime
    state: dict[str, object]

    @staticmethod
    def take(state: StepState, timestamp: datetime) -> "StepSnapshot":
        return StepSnapshot(state.id, state.version, timestamp, asdict(state))


@dataclass(frozen=True)
class SessionState:
    """A session as its events left it."""

    id: SessionId
    version: int
    name: str | None
    started_at: datetime
    ended: bool = False
    cwd: str | None = None
    source: str | None = None
    model: str | None = None
    key: str | None = None  # the access key it was started with (ledger.domain.access)
    role: str | None = None  # the role it took from that key


# --- plans ----------------------------------------------------------------------


def evolve_plan(state: PlanState | None, event: ev.LedgerEvent) -> PlanState:
    """Apply one plan-stream event; `state.steps` must be a private copy (see fold_plan)."""
    version = event.originator_version
    if isinstance(event, ev.PlanCreated):
        return PlanState(
            id=event.originator_id,
            version=version,
            slug=PlanSlug(event.slug),
            title=event.title,
            constraints=dict(event.constraints),
            created_at=event.timestamp,
            require_checks_pass=bool(event.require_checks_pass),
            review_required=bool(event.review_required),
        )
    assert state is not None, f"{type(event).__name__} before PlanCreated"
    steps = state.steps
    if isinstance(event, ev.StepAdded):
        step_id = StepId(event.step_id)
        steps[step_id] = StepDef(
            id=step_id,
            position=len(steps),
            title=event.title,
            body=event.body,
            depends_on=tuple(StepId(d) for d in event.depends_on),
            added_at=event.timestamp,
            priority=DEFAULT_PRIORITY if event.priority is None else event.priority,
            review_required=bool(event.review_required),
            key=event.key,
            parent=None if event.parent is None else StepId(event.parent),
            discovered_from=(None if event.discovered_from is None
                             else StepId(event.discovered_from)),
            labels=tuple(event.labels or ()),
            links=tuple(Link(r["kind"], r["target"]) for r in event.links or ()),
        )
        if event.parent is not None and (parent := steps.get(StepId(event.parent))):
            steps[parent.id] = replace(parent, children=(*parent.children, step_id))
            if not parent.children:
                return replace(state, version=version, parents=(*state.parents, parent.id))
    elif isinstance(event, ev.StepRevised):
        old = steps[StepId(event.step_id)]
        steps[old.id] = replace(
            old,
            title=old.title if event.title is None else event.title,
            body=old.body if event.body is None else event.body,
            priority=old.priority if event.priority is None else event.priority,
        )
    elif isinstance(event, ev.DependenciesDeclared):
        old = steps[StepId(event.step_id)]
        added = tuple(StepId(d) for d in event.depends_on if d not in old.depends_on)
        steps[old.id] = replace(old, depends_on=old.depends_on + added)
    elif isinstance(event, ev.PathsDeclared):
        old = steps[StepId(event.step_id)]
        steps[old.id] = replace(old, paths=tuple(PathSpec.of_record(r) for r in event.paths))
    return replace(state, version=version)


def fold_plan(state: PlanState | None, events: Iterable[ev.LedgerEvent]) -> PlanState | None:
    """Fold plan events; copies the step table once per fold, never per event."""
    if state is not None and not isinstance(state, PlanState):
        return None
    copied = state is None  # a fold from nothing builds its own table
    for event in events:
        if state is None and not isinstance(event, ev.PlanCreated):
            return None
        if not copied and state is not None:
            state = replace(state, steps=dict(state.steps))
            copied = True
        state = evolve_plan(state, event)
    return state


# --- steps ----------------------------------------------------------------------


def evolve_step(state: StepState | None, event: ev.LedgerEvent | StepSnapshot) -> StepState:
    if isinstance(event, StepSnapshot):
        kept = dict(event.state)
        notes = tuple(Note(**n) for n in kept.pop("notes", ()))  # type: ignore[attr-defined]
        return StepState(**kept, notes=notes)  # type: ignore[arg-type]
    version = event.originator_version
    if isinstance(event, ev.StepOpened):
        return StepState(id=StepId(event.originator_id), version=version, plan=PlanSlug(event.plan))
    assert state is not None, f"{type(event).__name__} before StepOpened"
    # Built directly rather than with dataclasses.replace: this fold runs for every step
    # event of a rebuild, and replace's field introspection was a large share of it
    # (figure: bench/findings.md).
    if isinstance(event, ev.StepClaimed):
        return StepState(state.id, version, state.plan, "in_progress",
                         SessionId(event.session_id or ""), event.fence, event.expires_at,
                         event.lease_seconds)  # a new claim has read the notes left
    if isinstance(event, ev.LeaseRenewed):
        return StepState(state.id, version, state.plan, state.status, state.holder,
                         state.fence, event.expires_at, event.lease_seconds, state.notes,
                         state.author)
    if isinstance(event, ev.StepNoted):
        note = Note(ev.author_of(event), event.timestamp, event.text, event.after)
        return StepState(state.id, version, state.plan, state.status, state.holder,
                         state.fence, state.expires_at, state.lease_seconds,
                         (*state.notes, note), state.author)
    if isinstance(event, ev.StepReleased | ev.StepReopened):
        return _unheld(state, version, "open")
    if isinstance(event, ev.StepCompleted):
        return _unheld(state, version, "done")
    if isinstance(event, ev.StepDropped):
        return _unheld(state, version, "dropped")
    if isinstance(event, ev.StepSubmitted | ev.ReviewClaimed | ev.StepReviewed):
        return _reviewed(state, version, event)
    return StepState(state.id, version, state.plan, state.status, state.holder, state.fence,
                     state.expires_at, state.lease_seconds, state.notes, state.author)


def _unheld(state: StepState, version: int, status: Status) -> StepState:
    return StepState(state.id, version, state.plan, status, None, state.fence, None,
                     state.lease_seconds, state.notes)


def _reviewed(state: StepState, version: int,
              event: ev.StepSubmitted | ev.ReviewClaimed | ev.StepReviewed) -> StepState:
    """A step through its review: submitted (its author kept), taken by a reviewer (held
    under a new fence, still in review), then approved (done) or rejected (open)."""
    if isinstance(event, ev.StepSubmitted):
        return StepState(state.id, version, state.plan, "in_review", None, state.fence, None,
                         state.lease_seconds, state.notes, SessionId(event.session_id or ""))
    if isinstance(event, ev.ReviewClaimed):
        return StepState(state.id, version, state.plan, "in_review",
                         SessionId(event.session_id or ""), event.fence, event.expires_at,
                         event.lease_seconds, state.notes, state.author)
    return _unheld(state, version, "done" if event.verdict == "approve" else "open")


def fold_step(
    state: StepState | None, events: Iterable[ev.LedgerEvent | StepSnapshot]
) -> StepState | None:
    """Fold a step stream; None when the stream is not a step's (an id of another kind)."""
    if state is not None and not isinstance(state, StepState):
        return None
    for event in events:
        if state is None and not isinstance(event, ev.StepOpened | StepSnapshot):
            return None
        state = evolve_step(state, event)
    return state


# --- sessions -------------------------------------------------------------------


def evolve_session(state: SessionState | None, event: ev.LedgerEvent) -> SessionState:
    version = event.originator_version
    if isinstance(event, ev.SessionStarted):
        return SessionState(
            id=SessionId(event.originator_id),
            version=version,
            name=event.name,
            started_at=event.timestamp,
            cwd=event.cwd,
            source=event.source,
            model=event.model,
            key=event.key,
            role=event.role,
        )
    assert state is not None, f"{type(event).__name__} before SessionStarted"
    # Made whole, not with dataclasses.replace (which reads the fields by name each time):
    # every claim, bounce and listing a session makes is one of these.
    ended = state.ended or isinstance(event, ev.SessionEnded)
    return SessionState(state.id, version, state.name, state.started_at, ended, state.cwd,
                        state.source, state.model, state.key, state.role)


def fold_session(
    state: SessionState | None, events: Iterable[ev.LedgerEvent]
) -> SessionState | None:
    """Fold a session stream; None when the stream is not a session's."""
    if state is not None and not isinstance(state, SessionState):
        return None
    for event in events:
        if state is None and not isinstance(event, ev.SessionStarted):
            return None
        state = evolve_session(state, event)
    return state
