"""Given-when-then for the ledger's handlers, with no runtime and no database.

`given(*events)` writes plain domain events into the real `EventStore` on the eventsourcing
library's in-memory persistence, beside a clock that stands still at `EPOCH`, ids in order
and a candidate view read straight from the store. `when(command)` runs the command through
`Ledger.execute` and answers a `Then`: its typed result or its refusal, and the facts the
command appended, read back from the log after the given ones.

Each stream's given events are numbered 1, 2, ... in the order given (the builders leave
the version 0), so a test lists the facts it needs and nothing about their bookkeeping.
Given events happen before `EPOCH`; a claim is placed by when its lease ends
(`expires_in` seconds from `EPOCH`: negative for a lapsed lease).
"""

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from planledger.infra.persistence import open_event_store
from planledger.ledger.application import Ledger
from planledger.ledger.commands import Command
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.claims import assess, reviewer
from planledger.ledger.domain.errors import LedgerError
from planledger.ledger.domain.ids import Actor, PlanSlug, SessionId, StepId, plan_stream
from planledger.ledger.domain.state import SATISFYING, StepDef, StepState
from planledger.ledger.execution import Attach
from planledger.ledger.ports import CandidateView, Clock
from planledger.ledger.storage import MEMORY
from planledger.ledger.store import EventStore
from tests.support import OPERATOR
from tests.support.fakes import EPOCH, FakeClock, SequentialIds

R = TypeVar("R")
E = TypeVar("E")
X = TypeVar("X", bound=LedgerError)

LEASE = 60  # the ledger's default lease here, and every given claim's
PLAN = PlanSlug("p")
BEFORE = EPOCH - timedelta(minutes=5)  # when given set-up happened
_LOG_PAGE = 100_000  # more facts than any one scene holds


# --- plain events, as tests give them ------------------------------------------------


def started(session: str, name: str | None = None) -> ev.SessionStarted:
    return ev.SessionStarted(session, 0, BEFORE, session, actor=session, name=name)


def ended(session: str) -> ev.SessionEnded:
    return ev.SessionEnded(session, 0, BEFORE, session, actor=session, released=[])


def plan(slug: str = PLAN, title: str = "P") -> ev.PlanCreated:
    return ev.PlanCreated(plan_stream(PlanSlug(slug)), 0, BEFORE, None, actor=OPERATOR,
                          slug=slug, title=title, constraints={})


def title_of(step: str) -> str:
    return f"do {step}"


def step(step_id: str, after: Sequence[str] = (), slug: str = PLAN) -> list[ev.LedgerEvent]:
    """A step added to its plan (waiting on `after`) and its own stream opened."""
    added = ev.StepAdded(plan_stream(PlanSlug(slug)), 0, BEFORE, None, actor=OPERATOR,
                         step_id=step_id, title=title_of(step_id), body="",
                         depends_on=list(after))
    opened = ev.StepOpened(step_id, 0, BEFORE, None, actor=OPERATOR, plan=slug)
    return [added, opened]


def from_now(seconds: float) -> datetime:
    """The moment `seconds` after the scene's `now` (the clock stands at `EPOCH`)."""
    return EPOCH + timedelta(seconds=seconds)


def claimed(step_id: str, by: str, fence: int = 1, expires_in: float = LEASE
            ) -> ev.StepClaimed:
    ends = from_now(expires_in)
    return ev.StepClaimed(step_id, 0, ends - timedelta(seconds=LEASE), by, actor=by,
                          fence=fence, lease_seconds=LEASE, expires_at=ends)


def completed(step_id: str, by: str, fence: int = 1) -> ev.StepCompleted:
    return ev.StepCompleted(step_id, 0, BEFORE, by, actor=by, fence=fence)


def submitted(step_id: str, by: str, fence: int = 1) -> ev.StepSubmitted:
    """The holder's completion of a step that needs a review: it waits in review."""
    return ev.StepSubmitted(step_id, 0, BEFORE, by, actor=by, fence=fence, evidence=None)


def dropped(step_id: str, by: Actor = OPERATOR) -> ev.StepDropped:
    return ev.StepDropped(step_id, 0, BEFORE, None, actor=by, fence=None)


# --- the scene -----------------------------------------------------------------------


class StoreView(CandidateView):
    """Candidates read from the store itself, not from a projection: `ready` applies the
    domain's claim rule at the clock's `now` to each of the plan's steps in plan order;
    `held_by` names every step whose claim names the session. Setting `lagging` pins what
    `ready` answers, as a read model behind the log would."""

    def __init__(self, store: EventStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.lagging: list[StepId] | None = None

    def ready(self, plan: PlanSlug) -> Sequence[StepId]:
        if self.lagging is not None:
            return list(self.lagging)
        steps = self.store.plan(plan).steps.values()  # in the order they were added
        return [d.id for d in steps if self._claimable(d)]

    def claim_order(self, plan: PlanSlug) -> Sequence[StepId]:
        """`ready` by priority, then the longest chain of open steps waiting on each
        first, worked out afresh from the plan's definitions (plan order breaks ties)."""
        definitions = self.store.plan(plan).steps
        waiting: dict[StepId, list[StepId]] = {s: [] for s in definitions}
        for d in definitions.values():
            if self._status(d.id) not in SATISFYING:
                for dep in d.waits_on:
                    waiting[dep].append(d.id)

        def level(step_id: StepId) -> int:  # test plans are shallow: plain recursion
            return 1 + max((level(d) for d in waiting[step_id]), default=0)

        return sorted(self.ready(plan), key=lambda s: (definitions[s].priority, -level(s)))

    def review_order(self, plan: PlanSlug) -> Sequence[StepId]:
        """The plan's steps in review that no reviewer holds now, in plan order."""
        steps = [self.store.step(d) for d in self.store.plan(plan).steps]
        return [s.id for s in steps if s.status == "in_review"
                and reviewer(s, self.clock.now(), self._holder_ended(s)) is None]

    def held_by(self, session: SessionId) -> Sequence[StepId]:
        opened = [StepId(f.originator_id) for _, f in self.store.log_after(0, _LOG_PAGE)
                  if isinstance(f, ev.StepOpened)]
        steps = [self.store.step(s) for s in opened]
        return [s.id for s in steps if s.status == "in_progress" and s.holder == session]

    def plans_with_key(self, key: str) -> Sequence[PlanSlug]:
        """Every plan with a step of this key, read from the log's plan events."""
        found = {f.originator_id.removeprefix("plan:") for _, f in
                 self.store.log_after(0, _LOG_PAGE)
                 if isinstance(f, ev.StepAdded) and f.key == key}
        return sorted(PlanSlug(p) for p in found)

    def _claimable(self, definition: StepDef) -> bool:
        step = self.store.step(definition.id)
        return assess(step, definition, self._status, self._holder_ended(step),
                      self.clock.now()).kind == "claimable"

    def _status(self, step_id: StepId) -> str:
        return self.store.step(step_id).status

    def _holder_ended(self, step: StepState) -> bool:
        return step.holder is not None and self.store.session(step.holder).ended


@dataclass(frozen=True)
class Then(Generic[R]):
    """What a command did: its result or its refusal, and every fact it appended."""

    result: R | None
    refusal: LedgerError | None
    events: list[Any]  # in log order; attached facts included

    @property
    def answer(self) -> R:
        assert self.refusal is None, f"refused: {self.refusal!r}"
        assert self.result is not None
        return self.result

    def refused(self, kind: type[X]) -> X:
        assert isinstance(self.refusal, kind), f"wanted {kind.__name__}, got {self.refusal!r}"
        return self.refusal

    @property
    def kinds(self) -> list[str]:
        return [type(e).__name__ for e in self.events]

    def one(self, kind: type[E]) -> E:
        found = [e for e in self.events if isinstance(e, kind)]
        assert len(found) == 1, f"wanted one {kind.__name__} in {self.kinds}"
        return found[0]


class Scene:
    """A ledger over an in-memory store that holds the given events."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.store = open_event_store(MEMORY)
        self.clock = clock or FakeClock()
        self.ids = SequentialIds()
        self.view = StoreView(self.store, self.clock)
        self.ledger = Ledger(self.store, self.clock, self.ids, self.view, lease_default=LEASE)

    def when(self, command: Command[R], attach: Attach | None = None) -> Then[R]:
        start = self.store.log_end()
        try:
            result = self.ledger.execute(command, attach)
        except LedgerError as refusal:
            return Then(None, refusal, self.since(start))
        return Then(result, None, self.since(start))

    def since(self, position: int) -> list[Any]:
        return [fact for _, fact in self.store.log_after(position, _LOG_PAGE)]


def given(*events: ev.LedgerEvent, clock: FakeClock | None = None) -> Scene:
    """A scene whose log holds `events`; `clock` replaces the one that stands still."""
    scene = Scene(clock)
    scene.store.append(_numbered(events))
    return scene


def _numbered(events: Sequence[ev.LedgerEvent]) -> list[ev.LedgerEvent]:
    versions: defaultdict[str, int] = defaultdict(int)
    numbered = []
    for event in events:
        versions[event.originator_id] += 1
        numbered.append(dataclasses.replace(
            event, originator_version=versions[event.originator_id]))
    return numbered
