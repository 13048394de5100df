"""The event store: the `eventsourcing` library's application, repository and log.

Our states are immutable, so the aggregate cache hands them out without copying and
fast-forwards them from the store on every read (a heartbeated step stays cheap to load).
"""

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, Protocol

from eventsourcing.application import AggregateNotFoundError, Application, Cache, Repository
from eventsourcing.persistence import EventStore as LibraryEventStore
from eventsourcing.persistence import (
    InfrastructureFactory,
    IntegrityError,
    Mapper,
    Recording,
)
from eventsourcing.utils import Environment, get_topic

from planledger.ledger.answers import Answer, AnswerRecorded
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.access import KeyState, fold_key, key_stream
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId, plan_stream
from planledger.ledger.domain.reservations import (
    NO_RESERVATIONS,
    RESERVATIONS_STREAM,
    Reservations,
    fold_reservations,
)
from planledger.ledger.domain.state import (
    PlanState,
    SessionState,
    StepSnapshot,
    StepState,
    fold_plan,
    fold_session,
    fold_step,
)
from planledger.ledger.followed import Appended, FollowedStates
from planledger.ledger.sealing import Encoded, Heads, SealingEventStore, UnsealingMapper
from planledger.ledger.stored_form import STORED_KINDS
from planledger.ledger.turns import TURN, turns

__all__ = ["ConflictError", "EventStore", "VersionGap", "WouldWait", "must_not_linger"]

ConflictError = IntegrityError


class VersionGap(IntegrityError):
    """An event's stream lacks the version before it in the log, so nothing was written:
    the stream was decided on a copy the log no longer holds (a failover lost its newest
    event). A conflict like any other: the store forgets the streams, and a retry reads
    them again from the log."""


class WouldWait(Exception):
    """The write lock is held elsewhere and nothing was written: run the block again where
    waiting is harmless (`EventStore.without_waiting`)."""


SNAPSHOT_INTERVAL = 100

for _kind in STORED_KINDS:  # (ledger.stored_form)
    get_topic(_kind)  # registers the kind under its TOPIC
_STEP_EVENTS = ev.STEP_STREAM_EVENTS


class Fact(Protocol):
    """What the store appends: the ledger's events, and other layers' facts kept in the
    same log (an idempotent answer in logs written before answers were kept beside the
    log, ledger.answers), which read models pass by."""

    @property
    def originator_id(self) -> str: ...
    @property
    def originator_version(self) -> int: ...
    @property
    def timestamp(self) -> datetime: ...


def _is_step_event(event: Fact) -> bool:
    return isinstance(event, _STEP_EVENTS)


# Streams whose cached state follows this process's own appends (plans are left to the
# fast-forward: folding a plan event copies its step table), by their state's type, and by
# the event that starts them (a stream this process started is cached from its start, so
# the first claim of a step it opened reads no snapshot and no history).
_FOLDS: dict[type, Callable[..., Any]] = {StepState: fold_step, SessionState: fold_session,
                                          Reservations: fold_reservations}
_STARTS: dict[type, Callable[..., Any]] = {ev.StepOpened: fold_step,
                                           ev.SessionStarted: fold_session,
                                           ev.PathsReserved: fold_reservations}


class _Appending(threading.local):
    """What a thread's open transaction has appended, and what it last appended. Defaults
    on the class: each command reads these several times, and plain attributes cost less
    than asking for them with defaults."""

    pending: list[tuple[Sequence[Fact], Sequence[int]]] | None = None  # events, positions
    caught_up = False  # the open unit has looked at the log's end (ledger.followed)
    position: int | None = None  # the log position of the thread's latest append


class _Hurried(threading.local):
    """Whether this thread runs a command inside `EventStore.without_waiting`."""

    active = False


_HURRIED = _Hurried()


def must_not_linger(why: str) -> None:
    """WouldWait inside `EventStore.without_waiting` (a command on an event loop), so a
    command about to do work that may take long (deciding path overlaps) runs again on a
    worker thread, having written nothing; elsewhere nothing."""
    if _HURRIED.active:
        raise WouldWait(why)


_NOTHING_FOLDED: dict[str, Any] = {}  # never written to


class StateCache(Cache[str, Any]):
    """The aggregate cache: the library's LRU cache in the C of an OrderedDict. Ours is
    asked on every read and told of every append (the library's relinks its own list in
    Python, under its lock, each time)."""

    def __init__(self, maxsize: int) -> None:
        super().__init__()
        self._states: OrderedDict[str, Any] = OrderedDict()
        self.cache = self._states
        self._maxsize = maxsize
        self._lock = threading.Lock()

    def get(self, key: str, *, evict: bool = False) -> Any:
        with self._lock:
            if evict:
                return self._states.pop(key)
            state = self._states[key]
            self._states.move_to_end(key)
            return state

    def put(self, key: str, value: Any) -> None:
        states = self._states
        with self._lock:
            states[key] = value
            states.move_to_end(key)
            if len(states) > self._maxsize:
                states.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._states.clear()


def _fold_for(known: Any, event: Appended) -> Callable[..., Any] | None:
    if known is None:
        return _STARTS.get(type(event))
    return _FOLDS.get(type(known))


class EventStore(Application[str]):
    """Appends events with optimistic concurrency and loads stream states."""

    name = "planledger"
    is_snapshotting_enabled = True

    def __init__(self, settings: dict[str, str],
                 persistence: type[InfrastructureFactory[Any]]) -> None:
        # The adapter is handed in by the wiring (infra.persistence), never named by a
        # string for the library to look up.
        self._persistence = persistence
        super().__init__(env=settings)
        self._appended = _Appending()
        kept = int(self.env.get("AGGREGATE_CACHE_MAXSIZE") or 0)
        self._cache = StateCache(kept) if kept else None  # asked on every read
        events = self.events  # what appends go through, typed once (not on every append)
        self._sealer = events if isinstance(events, SealingEventStore) else None
        # One transaction per block where the recorder's file offers it (our SQLite
        # persistence, infra.sqlite_file); the others run each statement alone.
        file = getattr(self.recorder, "file", None)
        self._unit: Callable[[], contextlib.AbstractContextManager[None]] = getattr(
            file, "unit", contextlib.nullcontext)
        self._without_waiting: Callable[[], contextlib.AbstractContextManager[None]] | None = (
            getattr(file, "without_waiting", None))
        # Where a unit holds the write lock from its start, commands read their streams
        # from states that follow the log (ledger.followed) instead of reading each again.
        self._followed = (FollowedStates(kept) if kept
                          and self._unit is not contextlib.nullcontext else None)

    def construct_factory(self, env: Environment) -> InfrastructureFactory[Any]:
        return self._persistence(env=env)

    def construct_repository(self) -> Repository[str]:
        # The states are cached by this store (StateCache, see _load_cached), not by the
        # library's repository: it only reconstructs one, from its latest snapshot.
        return Repository(event_store=self.events, snapshot_store=self.snapshots)

    @property
    def cache(self) -> "StateCache | None":
        """The streams' states this process keeps, newest used last (None: it keeps none)."""
        return self._cache

    # Tamper evidence (ledger.chain): every event is sealed to its stream's hash chain as it
    # is appended; the chain keys come off again when events are read.
    def construct_mapper(self) -> Mapper[str]:
        return self.factory.mapper(transcoder=self.construct_transcoder(),
                                   mapper_class=UnsealingMapper)

    def construct_event_store(self) -> LibraryEventStore[str]:
        # An idempotent answer's record is its stream's only event: no head worth keeping.
        return SealingEventStore(self.mapper, self.recorder, Heads(),
                                 final=frozenset({AnswerRecorded.TOPIC}))

    @property
    def sealing(self) -> bool:
        """Whether appends are sealed (off only to re-execute a recording made before)."""
        events = self.events
        return isinstance(events, SealingEventStore) and events.sealing

    @sealing.setter
    def sealing(self, on: bool) -> None:
        assert isinstance(self.events, SealingEventStore)
        self.events.sealing = on

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Reads and appends inside the block share one transaction where the database
        offers it (SQLite: the write lock is taken first, so what the reads saw cannot move
        before the append commits, and an error anywhere in the block rolls all of it
        back). Elsewhere each read and append runs on its own, and an append to a stream
        that moved since it was read fails as a conflict. Commands read, then append once,
        last, so they behave the same on both. Nested blocks join the outer one."""
        appended = self._appended
        if appended.pending is not None:
            yield
            return
        pending: list[tuple[Sequence[Fact], Sequence[int]]] = []  # events, positions
        appended.pending = pending
        appended.caught_up = False
        try:
            with self._unit():
                yield
        except BaseException:
            self._forget_heads(pending)
            raise
        finally:
            appended.pending = None
        self._learn(pending, caught_up=appended.caught_up)

    @contextlib.contextmanager
    def without_waiting(self) -> Iterator[None]:
        """Inside the block, the first transaction raises WouldWait, having written nothing,
        where it would wait for the write lock; the block can then run again where waiting
        is harmless (a worker thread, not an event loop). A store whose commands always
        wait on the network (PostgreSQL) raises it at once."""
        if self._without_waiting is None:
            raise WouldWait("this store's commands wait on the network")
        with self._without_waiting():
            _HURRIED.active = True
            try:
                yield
            finally:
                _HURRIED.active = False

    def full(self) -> bool:
        """Whether the store refuses writes at once for want of disk space (SQLite: after a
        write failed so, until room is made), so a caller can refuse before any work."""
        full = getattr(getattr(self.recorder, "file", None), "full", None)
        return bool(full()) if callable(full) else False

    def append(self, facts: Sequence[Fact | Answer]) -> list[Recording[str]]:
        """Append all events in one transaction (the enclosing `transaction()`'s, if any),
        and the answers among them to the table beside the log (ledger.answers); raises
        ConflictError if any stream moved or an answer's key is taken."""
        answers = [f for f in facts if isinstance(f, Answer)]
        # Most appends carry no answer: their events are the facts as given (copied once,
        # as the append keeps them until its transaction ends).
        events = [f for f in facts if not isinstance(f, Answer)] if answers else list(facts)
        if not events and not answers:
            return []
        # Use the library's event store directly. `Application.save` would first test each
        # event against a runtime-checkable Protocol to tell it from an aggregate, which is
        # slow (bench/findings.md), and then run hooks this application leaves empty.
        # An append that is its own transaction is encoded (and its new chains sealed)
        # before the transaction takes the write lock, so other writers wait only for its
        # insert.
        sealer = self._sealer
        assert sealer is not None, "appends go through a SealingEventStore"
        own = self._appended.pending is None  # a transaction of its own
        encoded = sealer.encode(events, ahead=own)
        if own:
            with self.transaction():
                positions = self._insert(sealer, encoded, answers)
        else:
            positions = self._insert(sealer, encoded, answers)
        return sealer.recordings(encoded, positions)

    def _insert(self, sealer: SealingEventStore, encoded: Encoded,
                answers: Sequence[Answer]) -> Sequence[int]:
        """Insert inside the current transaction, and note the append as pending."""
        appended = self._appended
        followed = self._followed
        if followed is not None and not appended.caught_up:
            self._catch_up(followed)
        try:
            if answers:
                if not callable(getattr(self.recorder, "select_answer", None)):
                    raise TypeError(f"{type(self.recorder).__name__} keeps no answers")
                positions = sealer.insert(encoded, answers=answers)
            else:
                positions = sealer.insert(encoded)
        except VersionGap:
            # What this process keeps of the streams runs ahead of the log: a retry must
            # read them from the log, not fast-forward the same copy.
            self.forget(list({e.originator_id for e in encoded.events}))
            raise
        assert appended.pending is not None, "inserted inside a transaction"
        appended.pending.append((encoded.events, positions))
        return positions

    def _learn(self, pending: Sequence[tuple[Sequence[Fact], Sequence[int]]], *,
               caught_up: bool) -> None:
        """Fold what the block appended into the followed states (if it caught up with the
        log first) and the cache, in turns (ledger.turns): a new plan's 2,001 events are
        milliseconds of folding, with the followed states' lock let go between turns."""
        for events, positions in pending:
            if len(events) <= TURN:  # most appends: one or two events, taken at once
                if caught_up and positions:
                    self._fold_committed(events, positions, caught_up)
                else:
                    self._committed(events, positions, _NOTHING_FOLDED)
                continue
            for part in turns(len(events)):
                self._fold_committed(events[part], positions[part], caught_up)

    def _fold_committed(self, events: Sequence[Fact], positions: Sequence[int],
                        caught_up: bool) -> None:
        folded: dict[str, Any] = {}
        if caught_up and positions:
            assert self._followed is not None
            folded = self._followed.committed(events, positions[-1], _fold_for)
        self._committed(events, positions, folded)

    def _committed(
        self, events: Sequence[Fact], positions: Sequence[int], folded: dict[str, Any]
    ) -> None:
        """What this process learns once its append has committed, and not before."""
        if positions:
            self._appended.position = positions[-1]
        self._advance_cached(events, folded)
        for event in events:
            if event.originator_version % SNAPSHOT_INTERVAL == 0 and _is_step_event(event):
                self._snapshot_step(StepId(event.originator_id), event)
            elif type(event) is ev.SessionEnded:  # it acts no more: its state is not kept
                self.forget([event.originator_id])

    def plan_of_step(self, step_id: StepId) -> PlanSlug | None:
        """The plan a step belongs to (None: no such step). A step never changes plans."""
        try:
            return self.step(step_id).plan
        except errors.UnknownStep:
            return None

    def forget(self, streams: Sequence[str]) -> None:
        """Let go of what this process keeps of these streams (their states, their chains'
        heads): they went quiet (an ended session, a finished plan's, see
        projections.archive). A later use reads them again: only memory changes."""
        cache = self._cache
        if cache is not None:
            for stream in streams:
                with contextlib.suppress(KeyError):
                    cache.get(stream, evict=True)
        if self._followed is not None:
            self._followed.forget(streams)
        if isinstance(self.events, SealingEventStore):
            self.events.heads.forget(streams)

    def forget_all(self) -> None:
        """Let go of every stream's state and chain head this process keeps: the log lost
        events they were folded from (a failover, see projections.readmodel), so each
        stream is read again from the log at its next use."""
        if self._cache is not None:
            self._cache.clear()
        if self._followed is not None:
            self._followed.forget_all()
        if isinstance(self.events, SealingEventStore):
            self.events.heads.forget_all()

    def _forget_heads(
        self, pending: Sequence[tuple[Sequence[Fact], Sequence[int]]]
    ) -> None:
        """Rolled back: the chain hashes noted for the block's events were never stored."""
        if isinstance(self.events, SealingEventStore):
            self.events.heads.forget(e.originator_id for events, _ in pending for e in events)

    def newest_event_time(self) -> datetime | None:
        """When the log's newest event happened, by the clock that decided it (None for an
        empty log): no later decision may be judged at an earlier time."""
        newest = self.recorder.max_notification_id()
        if not newest:
            return None
        found = self.recorder.select_notifications(start=newest, limit=1)
        if not found:
            return None
        moment = getattr(self.mapper.to_domain_event(found[0]), "timestamp", None)
        return moment if isinstance(moment, datetime) else None

    def last_position(self) -> int | None:
        """The log position of the calling thread's latest append (None before any), so a
        caller can ask a read model to wait until its own write is applied."""
        return self._appended.position

    def _snapshot_step(self, step_id: StepId, at: Fact) -> None:
        if self.snapshots is None:
            return
        state = self.repository.get(step_id, version=at.originator_version,
                                    projector_func=fold_step)
        with contextlib.suppress(IntegrityError):  # another process took the same snapshot
            self.snapshots.put([StepSnapshot.take(state, at.timestamp)])

    def _load(self, stream: str, fold: Callable[..., Any]) -> Any:
        """The stream's current state: inside a unit, from the followed states (after one
        look at the log's end per unit); elsewhere through the aggregate cache."""
        followed = self._followed
        if followed is None:
            return self._load_cached(stream, fold)
        appended = self._appended
        if appended.pending is None:
            return self._load_cached(stream, fold)
        if not appended.caught_up:
            self._catch_up(followed)
        state = followed.get(stream)
        if state is None:
            state = self._load_cached(stream, fold)  # its reads join the unit
            followed.put(stream, state)
        return state

    def _load_cached(self, stream: str, fold: Callable[..., Any]) -> Any:
        """Load through the aggregate cache, and keep the fast-forwarded state there.

        The library's repository fast-forwards a cached state on every read but caches only
        what it reconstructed, so with immutable states each read would fold every event
        since the first load, and a long-heartbeated step would get ever slower to read
        (figure: bench/findings.md). It also takes
        a per-stream lock for each fast-forward, which immutable states do not need: a
        racing thread may put back an older state, and the next read fast-forwards it. So
        a cached state is fast-forwarded here; the repository only reconstructs a missing
        one (from the latest snapshot).
        """
        cache = self._cache
        if cache is None:
            return self.repository.get(stream, projector_func=fold)
        try:
            cached = cache.get(stream)
        except KeyError:
            state = self.repository.get(stream, projector_func=fold)
        else:
            newer = self._newer_than(stream, cached.version)
            if newer is None:  # the log lost the cached state's event: read it all again
                self.forget([stream])
                state = self.repository.get(stream, projector_func=fold)
            elif not newer:  # most reads: nothing new, and `get` has marked it used
                return cached
            else:
                state = fold(cached, newer)
            if state is None:  # asked as another kind of stream: the cache stays as it was
                raise AggregateNotFoundError(stream)
        cache.put(stream, state)
        return state

    def _newer_than(self, stream: str, version: int) -> list[Any] | None:
        """The stream's events after `version`; None when the log no longer holds the
        event at `version` that a cached state was folded up to (a failover lost it). The
        same one query as a plain fast-forward, which would find nothing new in that case:
        a state cached from this process's own lost append would be taken for the log's
        (a step held or done that the log has open, passed over by every claim-next)."""
        sealer = self._sealer
        if sealer is None or version < 1:
            return list(self.events.get(stream, gt=version))
        return sealer.after_held(stream, version)

    def _catch_up(self, followed: FollowedStates) -> None:
        """Once per unit, before its first read or append (so that what it appends is
        followed too: a step a plan opens is claimed next without a read)."""
        if not self._appended.caught_up:
            followed.catch_up(self.recorder.max_notification_id() or 0, self._streams_in)
            self._appended.caught_up = True

    def _streams_in(self, after: int, upto: int) -> Iterator[str]:
        named = getattr(self.recorder, "streams_appended", None)  # names only (infra)
        if named is not None:
            return iter(named(after, upto))
        found = self.recorder.select_notifications(start=after + 1, limit=upto - after,
                                                   stop=upto)
        return (str(n.originator_id) for n in found)

    def plan(self, slug: PlanSlug) -> PlanState:
        try:
            state: PlanState = self._load(plan_stream(slug), fold_plan)
        except AggregateNotFoundError:
            raise errors.UnknownPlan(slug) from None
        return state

    def _advance_cached(self, events: Sequence[Fact], folded: dict[str, Any]) -> None:
        """Fold just-appended step and session events onto their cached states, so this
        process's cache stays current with its own writes (see `step(cached=True)`). Only
        a state at the version right before an event is advanced: an older or newer one
        (another thread's read) is left to the next fast-forward. States the followed ones
        have just folded (`folded`, current as of this commit) are taken as they are."""
        cache = self._cache
        if cache is None:
            return
        for event in events:
            if folded and (state := folded.get(event.originator_id)) is not None:
                cache.put(event.originator_id, state)
                continue
            try:
                cached = cache.get(event.originator_id)
            except KeyError:
                start = _STARTS.get(type(event))
                if start is not None and event.originator_version == 1:
                    cache.put(event.originator_id, start(None, [event]))
                continue
            fold = _FOLDS.get(type(cached))
            if fold is not None and cached.version == event.originator_version - 1:
                cache.put(event.originator_id, fold(cached, [event]))

    def step(self, step_id: StepId, *, cached: bool = False) -> StepState:
        """The step's state, read fresh; or with `cached`, this process's cached state
        without a read (None of the store's guarantees: only for a caller that appends to
        the step at the next version, so that a stale state fails as a conflict). Where
        states follow the log, the fresh read is as cheap, and is taken."""
        if cached and self._followed is None and self._cache is not None:
            with contextlib.suppress(KeyError):
                known = self._cache.get(step_id)
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

    def access_key(self, name: str) -> KeyState | None:
        """The key stream's state (ledger.domain.access), or None: no key was ever issued
        under `name`."""
        try:
            state = self._load(key_stream(name), fold_key)
        except AggregateNotFoundError:
            return None
        return state if isinstance(state, KeyState) else None

    def reservations(self) -> Reservations:
        """The reservations stream's state (ledger.domain.reservations): version 0 before
        any claim reserved paths. Read inside a transaction, a claim that appends to it at
        the next version serializes with every other reserving claim."""
        try:
            state = self._load(RESERVATIONS_STREAM, fold_reservations)
        except AggregateNotFoundError:
            return NO_RESERVATIONS
        return state if isinstance(state, Reservations) else NO_RESERVATIONS

    def answer(self, key: str) -> Answer | None:
        """The idempotent answer kept under `key` (ledger.answers): from the table beside
        the log, else from the log itself, where stores written before kept them."""
        select = getattr(self.recorder, "select_answer", None)  # ledger.answers.AnswerTable
        found: Answer | None = select(key) if callable(select) else None
        if found is not None:
            return found
        for event in self.events.get(key):
            if isinstance(event, AnswerRecorded):
                return Answer.from_record(event)
        return None

    def stream(self, originator_id: str) -> Iterable[Any]:
        return self.events.get(originator_id)

    def log_after(self, after: int, limit: int) -> list[tuple[int, Any]]:
        """Up to `limit` facts of the log after position `after` (ledger events, and other
        layers' facts: see `Fact`), each with its position, in log order: how a reader
        outside the store's adapters pages through the log."""
        notes = self.recorder.select_notifications(start=after, limit=limit,
                                                   inclusive_of_start=False)
        return [(n.id, self.mapper.to_domain_event(n)) for n in notes]

    def log_end(self) -> int:
        """The position of the log's newest event (0 for an empty log)."""
        return self.recorder.max_notification_id() or 0
