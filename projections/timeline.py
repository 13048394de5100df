"""The merged timeline: a plan's or some sessions' events on one clock, a lane per session.

Auditors read it to see who held which step when and why a claim bounced. Entries come in
log order, the order the store serialized the writes (which is what decided every race),
each stamped with the time its command ran. Bounces name the holder they bounced off.

`TimelineModel` follows a store's notification log like the other read models (`catch_up`),
or is fed events by hand (`apply`) when the log comes from a recording file.
"""

import threading
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime
from typing import Any

from ledger.domain import events as ev
from ledger.domain.ids import StepId
from ledger.domain.state import StepState, evolve_step
from ledger.store import EventStore
from projections.timeline_entries import Entry, EntryKind, StepInfo, describe

__all__ = ["Entry", "EntryKind", "Lane", "Progress", "Timeline", "TimelineModel"]

PAGE = 1000
LEDGER_LANE = "ledger"


@dataclass(frozen=True)
class Lane:
    """One session's column (`session_id` None: set-up done without a session)."""

    session_id: str | None
    name: str | None
    label: str


@dataclass(frozen=True)
class Progress:
    plan: str
    title: str
    total: int
    done: int
    dropped: int
    in_progress: int

    @property
    def text(self) -> str:
        dropped = f", {self.dropped} dropped" if self.dropped else ""
        return f"{self.plan}: {self.done}/{self.total} done{dropped}, {self.in_progress} in flight"


@dataclass(frozen=True)
class Timeline:
    lanes: tuple[Lane, ...]
    entries: tuple[Entry, ...]
    progress: tuple[Progress, ...]

    def lane(self, session_id: str | None) -> Lane:
        return next(lane for lane in self.lanes if lane.session_id == session_id)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: datetimes as ISO 8601 strings, tuples as lists."""
        result: dict[str, Any] = _plain(self)
        result["progress"] = [{**p, "text": q.text} for p, q in
                              zip(result["progress"], self.progress, strict=True)]
        return result


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


class TimelineModel:
    def __init__(self, store: EventStore | None = None) -> None:
        self.store = store
        self.position = 0
        self._entries: list[Entry] = []
        self._info: dict[str, StepInfo] = {}
        self._steps: dict[StepId, StepState] = {}
        self._plans: dict[str, tuple[str, list[StepId]]] = {}
        self._names: dict[str, str | None] = {}
        self._lock = threading.RLock()

    def catch_up(self) -> int:
        """Apply every event the store appended since the last call; returns the position."""
        assert self.store is not None, "a model fed by hand has no store to follow"
        with self._lock:
            while True:
                notes = self.store.recorder.select_notifications(
                    start=self.position, limit=PAGE, inclusive_of_start=False)
                for note in notes:
                    self.apply(note.id, self.store.mapper.to_domain_event(note))
                if len(notes) < PAGE:
                    return self.position

    def apply(self, position: int, event: object) -> None:
        """Fold one event at its log position; events of other layers are skipped."""
        with self._lock:
            self.position = max(self.position, position)
            if not isinstance(event, ev.LedgerEvent):
                return
            self._learn(event)
            entry = describe(position, event, self._info, self._steps.get(
                StepId(event.originator_id)))
            if isinstance(event, ev.StepOpened | ev.StepClaimed | ev.LeaseRenewed
                          | ev.StepReleased | ev.StepCompleted | ev.StepDropped
                          | ev.StepReopened):
                step_id = StepId(event.originator_id)
                self._steps[step_id] = evolve_step(self._steps.get(step_id), event)
            if entry is not None:
                self._entries.append(entry)

    def _learn(self, event: ev.LedgerEvent) -> None:
        """What later entries need to be readable: step numbers, titles, plans, names."""
        if isinstance(event, ev.PlanCreated):
            self._plans[event.slug] = (event.title, [])
        elif isinstance(event, ev.StepAdded):
            slug = event.originator_id.removeprefix("plan:")
            steps = self._plans[slug][1]
            steps.append(StepId(event.step_id))
            self._info[event.step_id] = StepInfo(slug, len(steps), event.title)
        elif isinstance(event, ev.StepRevised) and event.title is not None:
            old = self._info[event.step_id]
            self._info[event.step_id] = StepInfo(old.plan, old.number, event.title)
        elif isinstance(event, ev.SessionStarted):
            self._names[event.originator_id] = event.name

    # --- queries ------------------------------------------------------------------

    def timeline(
        self, plan: str | None = None, sessions: tuple[str, ...] = (),
        since: datetime | None = None, until: datetime | None = None,
    ) -> Timeline:
        """The entries of one plan (with the start and end of every session that acted on
        it), of some sessions, or of everything; optionally within [since, until]."""
        with self._lock:
            if self.store is not None:
                self.catch_up()
            chosen = [e for e in self._entries if _chosen(e, sessions, since, until)]
            if plan is not None:
                actors = {e.session_id for e in chosen if e.plan == plan}
                chosen = [e for e in chosen if e.plan == plan or (
                    e.kind in ("session_started", "session_ended") and e.session_id in actors)]
            plans = [plan] if plan is not None else list(dict.fromkeys(
                e.plan for e in chosen if e.plan is not None))
            return Timeline(self._lanes(chosen), tuple(chosen),
                            tuple(self._progress(p) for p in plans if p in self._plans))

    def _lanes(self, entries: list[Entry]) -> tuple[Lane, ...]:
        order = list(dict.fromkeys(e.session_id for e in entries))
        names = [self._names.get(s) for s in order if s is not None]
        lanes = []
        for session in order:
            name = self._names.get(session) if session is not None else None
            if session is None:
                label = LEDGER_LANE
            elif name is None:
                label = session
            else:
                label = name if names.count(name) == 1 else f"{name} …{session[-6:]}"
            lanes.append(Lane(session, name, label))
        return tuple(lanes)

    def _progress(self, plan: str) -> Progress:
        title, step_ids = self._plans[plan]
        statuses = [self._steps[s].status for s in step_ids if s in self._steps]
        return Progress(plan, title, len(step_ids), statuses.count("done"),
                        statuses.count("dropped"), statuses.count("in_progress"))


def _chosen(
    entry: Entry, sessions: tuple[str, ...], since: datetime | None, until: datetime | None
) -> bool:
    if sessions and entry.session_id not in sessions:
        return False
    if since is not None and entry.at < since:
        return False
    return until is None or entry.at <= until
