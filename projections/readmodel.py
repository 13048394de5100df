"""The live read model: the log folded into readiness, holders, progress and history.

`ReadModel` keeps a `LedgerView` at the log position it has applied (`position`). It
moves the view forward a page at a time from the store's notification log. Each position
is applied exactly once: the view refuses positions at or below its own, so a page read
twice (by two threads, or after a restore) changes nothing.

With a `CheckpointRecorder`, the model restores the newest checkpoint on start and
resumes from its tracked position. It does so only if the checkpoint passes every check
of `projections.resume` under the store's secret. A checkpoint that fails a check is
ignored: the `planledger.checkpoints` logger warns why, and the log is folded from the
start.

Freshness, three ways:
- by default every query first pulls what was appended since (`pull_on_read`), so a
  query in this process sees every append that committed before it;
- a `LogFollower` (see `projections.follower`) pulls in the background, so a model that
  does not pull on read still sees other processes' appends within a bounded delay;
- `wait_for(position)` / `wait_for_my_writes()` block until a given append is applied:
  read-your-writes for a caller that just appended.
"""

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING

from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.state import PlanState, SessionState, StepState
from planledger.ledger.notification_log import LogSource
from planledger.ledger.ports import CandidateView, Clock
from planledger.projections import queries
from planledger.projections.archive import LogArchive, RetiredPlans
from planledger.projections.follower import Tail
from planledger.projections.history import AsOf, as_of, step_history
from planledger.projections.log import PAGE, decode, page_after, page_from, paused_gc
from planledger.projections.queryable import Queryable
from planledger.projections.results import HistoryEntry
from planledger.projections.resume import (
    UnusableCheckpoint,
    binding_at,
    checkpoint_key,
    restored_view,
    saved_state,
    state_data,
)
from planledger.projections.rewind import Folded, LogRewound, folded, lost
from planledger.projections.view import FINISHED_KEPT, KeyIndex, LedgerView

if TYPE_CHECKING:  # a process that only reads loads neither (infra.sqlite_reading)
    from eventsourcing.persistence import Notification

    from planledger.projections.checkpoints import Checkpoints

CHECKPOINT_EVERY = 50_000
RETRY_SECONDS = 0.01

log = logging.getLogger("planledger.checkpoints")
rewind_log = logging.getLogger("planledger.readmodel")

# The store's secret, or what reads it when first needed (a PostgreSQL store opens without
# one, and then keeps no checkpoints).
Secret = bytes | Callable[[], bytes]
# A model given no secret tags its checkpoints under this one, made afresh by every process:
# it trusts only checkpoints saved by this process, never a file someone else wrote.
PROCESS_SECRET = secrets.token_bytes(32)

# Told of each applied event: its position, the event, and its step's state before it.
Listener = Callable[[int, object, StepState | None], None]


class ReadModel(Queryable, CandidateView):
    """The read models of one log, kept current.

    A long-lived process would create
    `ReadModel(store, clock, checkpoints=open_checkpoints(db), secret=store_secret)`.
    That model resumes on start and saves a checkpoint every `checkpoint_every` events.
    Each checkpoint is authenticated under the store's secret, or under `PROCESS_SECRET`
    when there is none. The process would then call `follow(model)` (see
    projections.follower). Where the store's database can wake its readers, `follow`
    starts the model's `tail`, which whoever opens the store provides (api.runtime).
    Elsewhere it polls."""

    def __init__(
        self, store: LogSource, clock: Clock, *,
        checkpoints: "Checkpoints | None" = None, secret: Secret | None = None,
        checkpoint_every: int = CHECKPOINT_EVERY, pull_on_read: bool = True, page: int = PAGE,
        tail: Tail | None = None, finished_kept: int = FINISHED_KEPT,
    ) -> None:
        self.store = store
        self.clock = clock
        self.checkpoints = checkpoints
        self.tail = tail
        self._secret: Secret | None = secret if secret is not None else PROCESS_SECRET
        self._key: bytes | None = None
        self.checkpoint_every = checkpoint_every
        self.pull_on_read = pull_on_read
        self.page = page
        # Finished plans retire from the view (projections.view), read back from the log.
        self._archive, self._finished_kept = LogArchive(store), finished_kept
        self.retired = RetiredPlans(store)
        self._folded = self._fresh_view()
        self._last: Folded | None = None  # the last event folded (projections.rewind)
        self._checkpointed = 0
        self._resumed_from = 0
        self._lock = threading.RLock()
        self._advanced = threading.Condition(self._lock)
        self._listeners: list[Listener] = []
        self._stoppers: list[Callable[[], None]] = []  # what reads from it in the background
        # Restored on first use, not here: a process that never reads (a CLI claim by id)
        # never pays for loading the state.
        self._unrestored = checkpoints is not None

    def _fresh_view(self) -> LedgerView:
        return LedgerView(self._archive, self._finished_kept)

    @property
    def _view(self) -> LedgerView:
        if self._unrestored:
            with self._lock:
                if self._unrestored and self.checkpoints is not None:
                    self._restore(self.checkpoints)
                self._unrestored = False
        return self._folded

    @_view.setter
    def _view(self, view: LedgerView) -> None:
        self._folded = view

    def resume(self) -> int:
        """Load the checkpoint now instead of at the first read, and return its position.

        A server calls this before it answers requests. The result is 0 when there was
        no checkpoint to resume from."""
        return self.resumed_from

    @property
    def resumed_from(self) -> int:
        """The position of the checkpoint the model started from (0: it folded from the
        start)."""
        _ = self._view
        return self._resumed_from

    # --- what it holds ------------------------------------------------------------

    @property
    def position(self) -> int:
        """The log position of the last event applied."""
        return self._view.position

    @property
    def plans(self) -> Mapping[PlanSlug, PlanState]:
        return self._view.plans

    @property
    def steps(self) -> Mapping[StepId, StepState]:
        return self._view.steps

    @property
    def sessions(self) -> Mapping[SessionId, SessionState]:
        return self._view.sessions

    def key_index(self) -> KeyIndex:
        """The access keys as last folded, read without pulling and without the lock.

        Every interface checks credentials against these (see LedgerView.key_index)."""
        return self._view.key_index()

    def facts(self) -> dict[str, object]:
        """Everything the model holds (see LedgerView.facts), without pulling."""
        with self._lock:
            return self._view.facts()

    @contextmanager
    def reading(self, now: datetime | None = None) -> Iterator[tuple[LedgerView, datetime]]:
        with self._lock:
            if self.pull_on_read:
                self.catch_up()
            yield self._view, now or self.clock.now()

    # --- following the log --------------------------------------------------------

    def catch_up(self) -> int:
        """Apply every event appended since the last call, and return the new position.

        Each page is read starting at the last event applied, which must still be there.
        If the log lost it (say in a failover), the log is folded again
        (projections.rewind)."""
        while True:
            try:
                with self._lock:  # a page at a time: queries get their turn during a backlog
                    position = self._view.position
                    notes = page_from(self.store, position, self.page)
                    self.apply_notifications(notes)
            except LogRewound:
                continue  # folded again from the log: read on from there
            if sum(1 for note in notes if note.id > position) < self.page:
                break
        if self._checkpoint_due():
            self.checkpoint()
        return self._view.position

    def _checkpoint_due(self) -> bool:
        """Whether a checkpoint is due: every `checkpoint_every` events, and on a long log
        every quarter of its length.

        Saving copies the whole state out and holds up readers meanwhile (figure:
        bench/findings.md). Spacing saves by a quarter of the log keeps that cost per
        event flat as the log grows. A crash then leaves less than a quarter of the log
        to fold again."""
        position = self._view.position
        return position - self._checkpointed >= max(self.checkpoint_every, position // 4)

    def apply_notifications(self, notes: "Sequence[Notification]") -> int:
        """Apply the notifications above the model's position, in order.

        Notifications at or below the position are skipped, so each position is applied
        once. Returns the position reached. Log followers feed this (see
        projections.follower). A page that starts at the model's position lets it check
        for free that the log still holds its last event; any other page costs one extra
        read of the log. If the log no longer holds that event, the model is folded again
        and LogRewound is raised."""
        with self._lock:
            position = self._view.position
            fresh = notes if not notes or notes[0].id > position else [
                note for note in notes if note.id > position]
            why = self._lost(position, notes) if fresh else None
            if why is None:
                if fresh:
                    with paused_gc():
                        if self._listeners:
                            self._apply_told(decode(self.store, fresh))
                        else:
                            self._view.apply_all(decode(self.store, fresh))
                    self._last = folded(fresh[-1])
                    self._advanced.notify_all()
                return self._view.position
        raise LogRewound(self._fold_again(why), why)

    def _lost(self, position: int, notes: "Sequence[Notification]") -> str | None:
        """Why the log no longer holds the last event applied, or None if it does.

        The check uses the note at `position` among `notes` when it is there, or else one
        read of the log."""
        if position <= 0:
            return None
        at = next((note for note in notes if note.id >= position), None)
        if at is None or at.id != position:
            found = page_from(self.store, position, 0)
            at = found[0] if found else None
        return lost(position, self._last, at)

    def _fold_again(self, why: str) -> int:
        """Recover after the log lost events that this model folded.

        Log a warning, drop the store's cached streams and the old log's checkpoints, and
        fold the log again."""
        rewind_log.warning(
            "the log no longer holds the last event the read model applied (%s): a "
            "failover may have lost the log's newest events; the read model is folded "
            "again from the log, and the store's kept states are dropped", why)
        self.store.forget_all()
        with self._lock:
            if self.checkpoints is not None:
                self.checkpoints.forget(self.store.name)
            self._checkpointed = 0
        return self.rebuild()

    def _apply_told(self, events: Sequence[tuple[int, object]]) -> None:
        """Apply one event at a time, telling each listener what was applied and the step's
        state before it."""
        view = self._view
        for position, event in events:
            before = view.steps.get(StepId(getattr(event, "originator_id", "")))
            if view.apply(event, position):
                for listener in self._listeners:
                    listener(position, event, before)
        view.settle()

    def listen(self, listener: "Listener") -> None:
        """Call `listener(position, event, step_before)` for every event applied from now
        on, in log order, under the model's lock (`lock`). A timeline follows the log
        this way without folding it a second time."""
        with self._lock:
            self._listeners.append(listener)

    def unlisten(self, listener: "Listener") -> None:
        """Stop calling `listener`. A listener that is not registered is ignored."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    @property
    def lock(self) -> threading.RLock:
        """The lock under which events are applied (and listeners told)."""
        return self._lock

    @property
    def view(self) -> LedgerView:
        """The current view (hold `lock` to read it while nothing is applied)."""
        return self._view

    def wait_for(self, position: int | None, timeout: float = 5.0) -> int:
        """Block until the event at `position` is applied, pulling it in if needed.

        Raises TimeoutError after `timeout` seconds. A `position` of None (nothing
        appended yet) returns at once."""
        deadline = time.monotonic() + timeout
        while position is not None and self._view.position < position:
            self.catch_up()
            remaining = deadline - time.monotonic()
            with self._advanced:
                if self._view.position >= position:
                    break
                if remaining <= 0:
                    raise TimeoutError(f"the read model is at {self._view.position}; "
                                       f"position {position} was not applied in {timeout}s")
                # Not visible yet (committing elsewhere): wake on the next page or retry.
                self._advanced.wait(min(remaining, RETRY_SECONDS))
        return self._view.position

    def wait_for_my_writes(self, timeout: float = 5.0) -> int:
        """Read-your-writes: wait until this thread's latest append is applied."""
        return self.wait_for(self.store.last_position(), timeout)

    def rebuild(self) -> int:
        """Drop the state and fold the whole log again.

        Queries keep answering from the old state until the new one has caught up."""
        fresh = self._fresh_view()
        last = self._fold_to_the_end(fresh, None)
        with self._lock:  # appends made meanwhile (the old state may hold them already)
            self._last = self._fold_to_the_end(fresh, last)
            self._view = fresh
            self._advanced.notify_all()
        return self.catch_up()

    def _fold_to_the_end(self, view: LedgerView, last: Folded | None) -> Folded | None:
        """Fold the log from the view's position to its end; return the last event folded."""
        while True:
            notes = page_after(self.store, view.position, self.page)
            if notes:
                with paused_gc():
                    view.apply_all(decode(self.store, notes))
                last = folded(notes[-1])
            if len(notes) < self.page:
                return last

    # --- checkpoints --------------------------------------------------------------

    def checkpoint(self) -> bool:
        """Save the state with its position, and return whether it was saved.

        Nothing is saved when nothing is new, when a newer checkpoint exists, or when
        there is no secret to authenticate the checkpoint."""
        if self.checkpoints is None or (key := self._checkpoint_key()) is None:
            return False
        with self._lock:
            position = self._view.position
            binding = binding_at(self.store, position) if position > self._checkpointed else None
            if binding is None:
                return False
            state = state_data(self._view)
        self._checkpointed = position
        saved = saved_state(state, binding, key)  # the JSON text and its MAC: outside the lock
        from eventsourcing.persistence import Tracking  # here: a process that only reads
        return self.checkpoints.save_checkpoint(Tracking(self.store.name, position), saved)

    def _checkpoint_key(self) -> bytes | None:
        """The key that authenticates checkpoints, derived once from the store's secret.

        Without a secret this returns None, logs a warning, and checkpoints go unused."""
        with self._lock:  # read once, by one thread: the others wait for its answer
            if self._key is None and self._secret is not None:
                secret, self._secret = self._secret, None
                try:
                    self._key = checkpoint_key(secret() if callable(secret) else secret)
                except (ValueError, OSError) as error:  # none configured, or unreadable
                    log.warning("read model checkpoints are not used: %s", error)
            return self._key

    def _restore(self, checkpoints: "Checkpoints") -> None:
        """Start from the newest checkpoint once it passes every check (projections.resume);
        otherwise fold the log from the start, saying why."""
        key = self._checkpoint_key()
        found = checkpoints.load_checkpoint(self.store.name) if key is not None else None
        if key is None or found is None:
            self._drop_if_past_the_log(checkpoints, "the log folded from the start")
            return
        position, saved = found
        try:
            restored = restored_view(self.store, position, saved, key)
        except UnusableCheckpoint as reason:
            log.warning("the read model's checkpoint at position %d is ignored and the log "
                        "folded from the start: %s", position, reason)
            self._drop_if_past_the_log(checkpoints)
            return
        restored.retire_into(self._archive, self._finished_kept)
        self._folded = restored
        self._checkpointed = self._resumed_from = restored.position

    def _drop_if_past_the_log(self, checkpoints: "Checkpoints",
                              warning: str | None = None) -> None:
        """Drop the checkpoints if they claim a position that the log has not reached.

        No checkpoint of this log can claim such a position, and every later save would
        be refused. It happens when the log was restored from an older copy, or the file
        was tampered with. With `warning`, log that the checkpoints were dropped."""
        tracked: object = checkpoints.max_tracking_id(self.store.name)
        if tracked is None:
            return
        # (A tracked position that is no number, in a tampered file, is no position either.)
        if type(tracked) is int:
            found = page_from(self.store, tracked, 0)
            why = lost(tracked, None, found[0] if found else None)
            if why is None:
                return
        else:
            why = f"position {tracked!r} is no position"
        if warning is not None:
            log.warning("the read model's checkpoints claim log position %r, which the log "
                        "does not hold (%s): they are dropped and %s", tracked, why, warning)
        checkpoints.forget(self.store.name)

    def stop_with_me(self, stop: Callable[[], None]) -> None:
        """Register `stop` for `close` to call first.

        A thread that reads the store through this model (a follower) must end before
        the store closes under it."""
        self._stoppers.append(stop)

    def close(self, *, checkpoint: bool = False) -> None:
        """Stop the background readers, then close the checkpoints.

        Before closing, save a checkpoint if `checkpoint` asks for one (a server shutting
        down) or if one is due anyway. One can be due because a follower applied events,
        and followers do not check."""
        stoppers, self._stoppers = self._stoppers, []
        for stop in stoppers:
            stop()
        if self.checkpoints is None:
            return
        if not self._unrestored and (checkpoint or self._checkpoint_due()):
            self.checkpoint()
        self.checkpoints.close()
        self.checkpoints = None

    # --- CandidateView ------------------------------------------------------------

    def held_by(self, session: SessionId) -> Sequence[StepId]:
        """Steps whose latest claim names the session (live or lapsed), by id."""
        with self.reading() as (view, _):
            return sorted(view.held.get(session, ()))

    def ready(self, plan: PlanSlug) -> Sequence[StepId]:
        with self.reading() as (view, moment):
            return queries.ready_ids(view, plan, moment)

    def plans_with_key(self, key: str) -> Sequence[PlanSlug]:
        with self.reading() as (view, _):
            return view.plans_with_key(key)

    # --- auditors -----------------------------------------------------------------

    def history(self, step_id: StepId, upto: int | None = None) -> list[HistoryEntry]:
        """Every event about the step, in log order (up to position `upto`)."""
        with self.reading() as (live, _):
            view = live
            if step_id not in live.steps and live.finished:  # a retired plan's, maybe
                view = self.detail(live, self._archive.plan_of(step_id) or PlanSlug(""))
            view.step(step_id)  # unknown steps are refused, not answered with nothing
            positions = list(view.history.get(step_id, ()))
        return step_history(self.store, positions, upto)

    def detail(self, view: LedgerView, plan: PlanSlug) -> LedgerView:
        """The view that holds the plan's steps, definitions, index and history.

        This is `view` (what `reading` yields), unless the plan retired from it. For a
        retired plan it is a view of that plan alone, folded back from the log (see
        projections.archive)."""
        return self.retired.detail(view, plan)

    def as_of(self, position: int | None = None, time: datetime | None = None) -> AsOf:
        """The read models as they stood at a log position or a time (see history)."""
        return as_of(self.store, position, time, self.page)
