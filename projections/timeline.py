"""The merged timeline: a plan's or some sessions' events on one clock, a lane per session.

Auditors read it to see who held which step when and why a claim bounced. Entries come in
log order, the order the store serialized the writes (which is what decided every race),
each stamped with the time its command ran. Bounces name the holder they bounced off.

`TimelineModel` follows a store's notification log like the other read models
(`catch_up`). When the log comes from a recording file, events are fed to it by hand
(`apply`). On a server, beside a live `ReadModel`, a plan's timeline (what the console
reads) is read from the log on demand, with that plan's events only
(projections.plan_timelines). The timeline of some sessions, or of everything, folds the
log by itself once, up to the read model's position. After that the read model passes it
each event it applies, so the log is folded once, not twice.
"""

import bisect
import logging
import sys
import threading
from datetime import datetime

from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PLAN_STREAM_PREFIX, PlanSlug, SessionId, StepId
from planledger.ledger.domain.state import StepState
from planledger.ledger.store import EventStore
from planledger.projections import queries
from planledger.projections.log import PAGE, decode, page_after, paused_gc
from planledger.projections.plan_timelines import PlanTimelines
from planledger.projections.readmodel import ReadModel
from planledger.projections.results import Progress
from planledger.projections.timeline_entries import (
    Entry,
    EntryKind,
    Lane,
    StepInfo,
    Timeline,
    describe,
)
from planledger.projections.timeline_pages import EntryIndex, chosen, position_of, take
from planledger.projections.view import LedgerView

__all__ = ["Entry", "EntryKind", "Lane", "Progress", "Timeline", "TimelineModel"]

LEDGER_LANE = "ledger"

log = logging.getLogger(__name__)

_RETITLED = ev.StepAdded | ev.StepRevised  # built once, not for every event


class TimelineModel:
    """Timeline entries folded from the log, beside a `LedgerView` of the same events.

    The view names steps and sessions, and knows each step's state before the event that
    changes it. The model uses its own view. Given `reads`, it switches to the read
    model's view once it has caught up with it (see `catch_up`)."""

    def __init__(self, store: EventStore | None = None, reads: ReadModel | None = None) -> None:
        self.store = store
        self._reads = reads
        self._view: LedgerView | None = LedgerView()  # ours, until the read model's serves
        self._attach = threading.Lock()
        self._entries: list[Entry] = []
        self._plans = EntryIndex()  # so one plan's timeline reads that plan's entries only
        self._plan_of: dict[str, str] = {}
        self._infos: dict[str, StepInfo] = {}
        self._position = 0
        self._lock = threading.RLock()
        # Beside a live read model, a plan's timeline is read from the log on demand.
        self._plan_timelines = (PlanTimelines(store, reads, TimelineModel)
                                if store is not None and reads is not None else None)

    @property
    def position(self) -> int:
        return self._position

    def catch_up(self) -> int:
        """Apply every event the store appended since the last call; returns the position."""
        if self._reads is not None:
            if self._view is not None:
                self._join_reads(self._reads)
            self._reads.catch_up()  # tells us each event it applies
            return self._position
        with self._lock:
            return self._fold_until(None)

    def _fold_until(self, stop: int | None) -> int:
        """Fold the log with our own view, up to `stop` (None: to the end of the log)."""
        assert self.store is not None, "a model fed by hand has no store to follow"
        while True:
            notes = page_after(self.store, self._position, PAGE, stop)
            with paused_gc():  # as the read model's fold (projections.log)
                for position, event in decode(self.store, notes):
                    self.apply(position, event)
            if len(notes) < PAGE:
                return self._position

    def _join_reads(self, reads: ReadModel) -> None:
        """Catch up with the read model, then follow it.

        The read model cannot replay what it has already applied, so we fold that part
        of the log ourselves, without holding up its readers. Then, under its lock, we
        fold the gap it moved on meanwhile, and register to hear every later event. Our
        own view is dropped; from then on the read model's view names steps and sessions.
        If the read model has applied nothing yet, there is nothing to fold: it tells us
        every event."""
        with self._attach:
            if self._view is None:
                return  # another thread joined first
            with self._lock:
                self._fold_until(reads.position)
            with reads.lock, self._lock:
                self._fold_until(reads.position)  # what it applied meanwhile
                reads.listen(self._told)
                self._lock = reads.lock  # share its lock: it calls us while holding it
                self._view = None

    def _told(self, position: int, event: object, before: StepState | None) -> None:
        if position <= self._position:
            return  # folded already, before we listened
        try:
            self._add(position, event, before)
        except Exception:  # a timeline entry is never worth failing the read model
            log.exception("timeline: event at position %s not described", position)
            self._position = position

    def _current(self) -> LedgerView:
        if self._view is not None:
            return self._view
        assert self._reads is not None
        return self._reads.view

    def apply(self, position: int, event: object) -> None:
        """Fold one event at its log position; each position is folded once.

        Events of other layers only move the position."""
        with self._lock:
            assert self._view is not None, "the read model tells this model its events"
            before = self._view.steps.get(StepId(getattr(event, "originator_id", "")))
            if self._view.apply(event, position):
                self._add(position, event, before)

    def _add(self, position: int, event: object, before: StepState | None) -> None:
        self._position = position
        if isinstance(event, ev.LedgerEvent):
            if isinstance(event, ev.StepAdded):  # known before its own stream opens
                self._plan_of[event.step_id] = event.originator_id.removeprefix(
                    PLAN_STREAM_PREFIX)
            if isinstance(event, _RETITLED):
                self._infos.pop(event.step_id, None)  # its title is new
            entry = describe(position, event, self._info, before)
            if entry is not None:
                self._entries.append(entry)
                self._plans.add(entry)

    def _info(self, step_id: str) -> StepInfo | None:
        """The step's plan, number and title as of the event being described.

        The result is kept until the step is revised, because most entries are about
        steps whose titles never change."""
        known = self._infos.get(step_id)
        if known is not None:
            return known
        plan = self._plan_of.get(step_id)
        state = self._current().plans.get(PlanSlug(plan)) if plan else None
        definition = state.steps.get(StepId(step_id)) if state else None
        if plan is None or definition is None:
            return None
        info = self._infos[step_id] = StepInfo(plan, definition.position + 1, definition.title,
                                               sys.intern(step_id))
        return info

    # --- queries ------------------------------------------------------------------

    def timeline(
        self, plan: str | None = None, sessions: tuple[str, ...] = (),
        since: datetime | None = None, until: datetime | None = None,
        after: int = 0, limit: int | None = None,
    ) -> Timeline:
        """Timeline entries: of one plan, of some sessions, or of everything.

        A plan's entries include the start and end of every session that acted on it.
        `since` and `until` limit the entries by time. Of those, the result holds the ones
        after log position `after`, at most `limit` of them. A page of a plan's timeline
        also carries the start of each session whose first act on the plan is on the
        page, even when that start came before `after`. So a reader who adds pages in
        position order ends with the same timeline as one who reads it whole."""
        if plan is not None and self._plan_timelines is not None:
            return self._plan_timelines.timeline(plan, sessions, since, until, after, limit)
        if self.store is not None:
            self.catch_up()
        with self._lock:
            if plan is None:
                start = bisect.bisect_right(self._entries, after, key=position_of)
                later = (e for e in self._entries[start:] if chosen(e, sessions, since, until))
                page, more = take(later, limit)
            else:
                page, more = self._plans.page(plan, sessions, since, until, after, limit)
            plans = [plan] if plan is not None else list(dict.fromkeys(
                e.plan for e in page if e.plan is not None))
            next_after = max((e.position for e in page), default=after)
            return Timeline(self._lanes(page), tuple(page), self._progress(plans), more,
                            next_after)

    def _lanes(self, entries: list[Entry]) -> tuple[Lane, ...]:
        order = list(dict.fromkeys(e.session_id for e in entries))
        sessions = self._current().sessions
        named = {s: state.name for s in order if s is not None
                 and (state := sessions.get(SessionId(s))) is not None}
        names = list(named.values())
        lanes = []
        for session in order:
            name = named.get(session) if session is not None else None
            if session is None:
                label = LEDGER_LANE
            elif name is None:
                label = session
            else:
                label = name if names.count(name) == 1 else f"{name} …{session[-6:]}"
            lanes.append(Lane(session, name, label))
        return tuple(lanes)

    def _progress(self, plans: list[str]) -> tuple[Progress, ...]:
        """Progress as of the last event applied: the read side's own counting."""
        return queries.progress_as_of_last(self._current(), plans)

