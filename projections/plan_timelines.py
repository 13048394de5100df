"""A plan's timeline, read from the log on demand beside a live read model.

Only that plan's events are read, found through the positions the read model keeps. The
whole log is not folded.

The first time someone asks for a plan's timeline, the needed events are read at their
positions (`plan_positions`): the plan's stream, its steps' events and the refusals that
name them, its ready listings, and every session's start and end. They are fed in log
order to a `TimelineModel` of the plan's own. That model describes them exactly as a
model fed the whole log would. After that, the read model passes it each new event about
the plan. A few plans' models are kept (the console watches one), and the one read least
recently is dropped first.

So on a server with a large log, the console's timeline costs only that plan's entries.
It does not cost an entry for every event of the log, folded on the first request.
"""

import logging
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PlanSlug, StepId, plan_stream
from planledger.ledger.domain.state import StepState
from planledger.ledger.store import EventStore
from planledger.projections import queries
from planledger.projections.log import at_positions, paused_gc
from planledger.projections.readmodel import Listener, ReadModel
from planledger.projections.timeline_entries import Timeline
from planledger.projections.view import LedgerView

log = logging.getLogger(__name__)

KEPT = 8  # plans whose timelines are kept current; a console watches one at a time

def plan_positions(view: LedgerView, plan: PlanSlug, after: int, upto: int) -> list[int]:
    """The ascending log positions in (after, upto] of every event a timeline of the plan
    reads (the view must not move meanwhile: hold the read model's lock)."""
    found: set[int] = set()
    for positions in [*view.positions_of(plan), view.session_marks]:
        found.update(positions[bisect_right(positions, after):bisect_right(positions, upto)])
    return sorted(found)


class PlanModel(Protocol):
    """What a plan's timeline is kept in: `projections.timeline.TimelineModel`, which builds
    these beside its read model (and so is named here only by what it offers)."""

    @property
    def position(self) -> int: ...

    def apply(self, position: int, event: object) -> None: ...

    def timeline(self, plan: str, sessions: tuple[str, ...], since: datetime | None,
                 until: datetime | None, after: int, limit: int | None) -> Timeline: ...


class _Watched:
    """One plan's model and the listener that keeps it current."""

    def __init__(self, model: PlanModel, told: Listener) -> None:
        self.model, self.told = model, told


class PlanTimelines:
    """Plans' timelines built on demand beside `reads`, which they follow."""

    def __init__(self, store: EventStore, reads: ReadModel,
                 make_model: Callable[[], PlanModel], kept: int = KEPT) -> None:
        self.store, self.reads, self.kept = store, reads, kept
        self._make_model = make_model
        self._watched: OrderedDict[str, _Watched] = OrderedDict()
        self._building = threading.Lock()  # one plan built at a time

    def timeline(self, plan: str, sessions: tuple[str, ...], since: datetime | None,
                 until: datetime | None, after: int, limit: int | None) -> Timeline:
        """As `TimelineModel.timeline(plan, …)`; progress is the read model's own."""
        self.reads.catch_up()  # tells every watched plan what came since
        if not self.reads.view.knows(PlanSlug(plan)):
            return Timeline((), (), ())
        found = self._watching(plan).timeline(plan, sessions, since, until, after, limit)
        with self.reads.lock:
            progress = queries.progress_as_of_last(self.reads.view, [plan])
        return replace(found, progress=progress)

    def _watching(self, plan: str) -> PlanModel:
        with self._building:
            watched = self._watched.get(plan)
            if watched is None:
                watched = self._watch(PlanSlug(plan))
                self._watched[plan] = watched
                if len(self._watched) > self.kept:
                    _, gone = self._watched.popitem(last=False)
                    self.reads.unlisten(gone.told)
            self._watched.move_to_end(plan)
            return watched.model

    def _watch(self, plan: PlanSlug) -> _Watched:
        """Feed a new model what the read model has applied of the plan (the bulk without
        holding up its readers), then, under its lock, what it applied meanwhile; and
        listen for the rest."""
        model, reads = self._make_model(), self.reads
        with reads.lock:
            upto = reads.position
            positions = plan_positions(reads.view, plan, 0, upto)
        self._feed(model, positions)
        with reads.lock:
            self._feed(model, plan_positions(reads.view, plan, upto, reads.position))
            told = self._teller(model, plan)
            reads.listen(told)
        return _Watched(model, told)

    def _feed(self, model: PlanModel, positions: list[int]) -> None:
        with paused_gc():  # as the read model's fold (projections.log)
            for position, event in at_positions(self.store, positions):
                model.apply(position, event)

    def _teller(self, model: PlanModel, plan: PlanSlug) -> Listener:
        stream, reads = plan_stream(plan), self.reads

        def told(position: int, event: object, before: StepState | None) -> None:
            try:
                if position > model.position and concerns(reads.view, plan, stream, event):
                    model.apply(position, event)
            except Exception:  # a timeline entry is never worth failing the read model
                log.exception("timeline of %s: event at position %s not described",
                              plan, position)
        return told


def concerns(view: LedgerView, plan: PlanSlug, stream: str, event: object) -> bool:
    """Whether a plan's timeline reads the event (the read model has applied it)."""
    if not isinstance(event, ev.LedgerEvent):
        return False
    if isinstance(event, ev.SessionStarted | ev.SessionEnded):
        return True
    if isinstance(event, ev.ReadyListed):
        return event.plan == plan
    if event.originator_id == stream:
        return True
    step_id = getattr(event, "step_id", None) or event.originator_id
    step = view.steps.get(StepId(step_id))
    return step is not None and step.plan == plan
