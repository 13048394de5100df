"""The event store: the `eventsourcing` library's application, repository and log.

Our states are immutable, so the aggregate cache hands them out without copying and
fast-forwards them from the store on every read (a heartbeated step stays cheap to load).
"""

import contextlib
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import EventStore as LibraryEventStore
from eventsourcing.persistence import IntegrityError, Mapper, Recording

from ledger.domain import errors
from ledger.domain import events as ev
from ledger.domain.events import LedgerEvent
from ledger.domain.ids import PlanSlug, SessionId, StepId, plan_stream
from ledger.domain.state import (
    PlanState,
    SessionState,
    StepSnapshot,
    StepState,
    fold_plan,
    fold_session,
    fold_step,
)
from ledger.sealing import Heads, SealingEventStore, UnsealingMapper

__all__ = ["ConflictError", "EventStore"]

ConflictError = IntegrityError


SNAPSHOT_INTERVAL = 100
_STEP_EVENTS = (ev.StepOpened, ev.StepClaimed, ev.LeaseRenewed, ev.StepReleased,
                ev.StepCompleted, ev.StepDropped, ev.StepReopened)


def _is_step_event(event: LedgerEvent) -> bool:
    return isinstance(event, _STEP_EVENTS)


# Streams whose cached state follows this process's own appends (plans are left to the
# fast-forward: folding a plan event copies its step table).
_FOLDS: dict[type, Callable[..., Any]] = {StepState: fold_step, SessionState: fold_session}



class EventStore(Application[str]):
    """Appends events with optimistic concurrency and loads stream states."""

    name = "planledger"
    is_snapshotting_enabled = True

    def __init__(self, settings: dict[str, str]) -> None:
        super().__init__(env=settings)
        self._appended = threading.local()

    # Tamper evidence (ledger.chain): every event is sealed to its stream's hash chain as it
    # is appended; the chain keys come off again when events are read.
    def construct_mapper(self) -> Mapper[str]:
        return self.factory.mapper(transcoder=self.construct_transcoder(),
                                   mapper_class=UnsealingMapper)

    def construct_event_store(self) -> LibraryEventStore[str]:
        return SealingEventStore(self.mapper, self.recorder, Heads())

    @property
    def sealing(self) -> bool:
        """Whether appends are sealed (off only to re-execute a recording made before)."""
        events = self.events
        return isinstance(events, SealingEventStore) and events.sealing

    @sealing.setter
    def sealing(self, on: bool) -> None:
        assert isinstance(self.events, SealingEventStore)
        self.events.sealing = on

    def append(self, events: Sequence[LedgerEvent]) -> list[Recording[str]]:
        """Append all events in one transaction; raises ConflictError if any stream moved."""
        if not events:
            return []
        recordings = self.save(*events)
        if recordings:
            self._appended.position = recordings[-1].notification.id
        self._advance_cached(events)
        for event in events:
            if event.originator_version % SNAPSHOT_INTERVAL == 0 and _is_step_event(event):
                self._snapshot_step(StepId(event.originator_id), event)
        return recordings

    def last_position(self) -> int | None:
        """The log position of the calling thread's latest append (None before any), so a
        caller can ask a read model to wait until its own write is applied."""
        position: int | None = getattr(self._appended, "position", None)
        return position

    def _snapshot_step(self, step_id: StepId, at: LedgerEvent) -> None:
        if self.snapshots is None:
            return
        state = self.repository.get(step_id, version=at.originator_version,
                                    projector_func=fold_step)
        with contextlib.suppress(IntegrityError):  # another process took the same snapshot
            self.snapshots.put([StepSnapshot.take(state, at.timestamp)])

    def _load(self, stream: str, fold: Callable[..., Any]) -> Any:
        """Load through the aggregate cache, and keep the fast-forwarded state there.

        The library fast-forwards a cached state on every read but caches only what it
        reconstructed, so with immutable states each read would fold every event since the
        first load (a step heartbeated 1,000 times got 17x slower). A racing thread may
        put back an older state: harmless, the next read fast-forwards it.
        """
        state = self.repository.get(stream, projector_func=fold)
        if self.repository.cache is not None:
            self.repository.cache.put(stream, state)
        return state

    def plan(self, slug: PlanSlug) -> PlanState:
        try:
            state: PlanState = self._load(plan_stream(slug), fold_plan)
        except AggregateNotFoundError:
            raise errors.UnknownPlan(slug) from None
        return state

    def _advance_cached(self, events: Sequence[LedgerEvent]) -> None:
        """Fold just-appended step and session events onto their cached states, so this
        process's cache stays current with its own writes (see `step(cached=True)`). Only
        a state at the version right before an event is advanced: an older or newer one
        (another thread's read) is left to the next fast-forward."""
        cache = self.repository.cache
        if cache is None:
            return
        for event in events:
            try:
                cached = cache.get(event.originator_id)
            except KeyError:
                continue
            fold = _FOLDS.get(type(cached))
            if fold is not None and cached.version == event.originator_version - 1:
                cache.put(event.originator_id, fold(cached, [event]))

    def step(self, step_id: StepId, *, cached: bool = False) -> StepState:
        """The step's state, read fresh; or with `cached`, this process's cached state
        without a read (None of the store's guarantees: only for a caller that appends to
        the step at the next version, so that a stale state fails as a conflict)."""
        if cached and self.repository.cache is not None:
            with contextlib.suppress(KeyError):
                known = self.repository.cache.get(step_id)
                if isinstance(known, StepState):
                    return known
        try:
            state: StepState = self._load(step_id, fold_step)
        except AggregateNotFoundError:
            raise errors.UnknownStep(step_id) from None
        if not isinstance(state, StepState):
            raise errors.UnknownStep(step_id)
        return state

    def session(self, session_id: SessionId) -> SessionState:
        try:
            state: SessionState = self._load(session_id, fold_session)
        except AggregateNotFoundError:
            raise errors.UnknownSession(session_id) from None
        if not isinstance(state, SessionState):
            raise errors.UnknownSession(session_id)
        return state

    def stream(self, originator_id: str) -> Iterable[Any]:
        return self.events.get(originator_id)
