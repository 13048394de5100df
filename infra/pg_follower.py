"""Following the log on PostgreSQL: woken by LISTEN/NOTIFY, not by a polling interval.

Every append NOTIFYs the log's channel in its own transaction, under the table lock that
keeps notification ids in commit order (the library's insert path; its database-functions
path skips that lock, and stays off). The library's subscription LISTENs on that channel,
pulls what is new when woken and yields it in order; a thread here hands each notification
to the read model and publishes the position reached, so that

- an event appended by another replica is applied one round trip after its commit, and
- a caller can wait until its own write's position is applied (read-your-writes).

Two safety nets keep the delay bounded even when a wake-up is lost: the subscription pulls
once before its LISTEN is in place (an append in that gap sends its NOTIFY to nobody), and a
dropped connection ends the subscription. So every `resync_seconds` the follower also pulls
directly (one indexed query that usually finds nothing), and a failed subscription is
restarted from the applied position. The model's `apply` skips what it already has, so the
two paths never apply an event twice.

After a failover the log may have lost events the model applied (projections.rewind). Pages
pulled here are read from the applied position inclusive, so the model sees at no cost that
its last event is still there; it looks at the log once for each page the subscription
hands over. A model that finds its event gone is folded again (`LogRewound`): the follower
then goes on from the model's position, and the subscription, which would go on after the
lost events, is started again from there.

It keeps the read side's contract for a follower (projections.follower), and a read model
of a PostgreSQL log is handed this class as its `tail` by whoever opens the store
(api.runtime).
"""

import logging
import threading
from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import ApplicationRecorder, Notification, Subscription

from planledger.ledger.notification_log import LogSource
from planledger.projections.follower import ApplyNotes
from planledger.projections.log import page_from
from planledger.projections.rewind import LogRewound

log = logging.getLogger(__name__)

RESYNC_SECONDS = 1.0
RESTART_BACKOFF_SECONDS = 0.5
PAGE = 500


class PgFollower:
    """Keeps a read model current from PostgreSQL's LISTEN/NOTIFY subscription."""

    def __init__(self, store: LogSource, apply: ApplyNotes, position: int = 0,
                 resync_seconds: float = RESYNC_SECONDS) -> None:
        self.store = store
        self._apply = apply
        self._position = position
        self._resync_seconds = resync_seconds
        self._moved = threading.Condition()
        self._stopping = threading.Event()
        self._subscription: Subscription[Any] | None = None
        self._applying = threading.Lock()
        self._rewinds = 0  # how many times the model found the log rewound
        self._threads: list[threading.Thread] = []
        self.errors = 0
        self.last_error: Exception | None = None

    @property
    def position(self) -> int:
        with self._moved:
            return self._position

    def start(self) -> "PgFollower":
        for target, name in ((self._follow, "pg-follower"), (self._resync, "pg-resync")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._stop_subscription()
        with self._moved:
            self._moved.notify_all()
        for thread in self._threads:
            thread.join(5)

    def __enter__(self) -> "PgFollower":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_for(self, position: int, timeout: float) -> bool:
        """Wait until the model has applied `position`; False if `timeout` passed first."""
        with self._moved:
            return self._moved.wait_for(
                lambda: self._position >= position or self._stopping.is_set(), timeout
            ) and self._position >= position

    # --- the two threads ----------------------------------------------------------

    def _follow(self) -> None:
        while not self._stopping.is_set():
            try:
                if self._follow_subscription():
                    continue  # ended as the log was rewound: at once from the new position
            except Exception as error:  # a dropped connection, a restarting server
                self._failed(error)
                log.warning("PostgreSQL subscription failed (%s); restarting from %s",
                            error, self.position)
            self._stopping.wait(RESTART_BACKOFF_SECONDS)

    def _follow_subscription(self) -> bool:
        """Follow until the subscription ends; True if it ended as the log was rewound."""
        # What is already in the log comes in pages (a new replica folds the whole log);
        # the subscription then hands over each new notification as it is committed.
        self._catch_up()
        recorder = self.store.recorder
        # The tail of a PostgreSQL store only (api.runtime): its recorder subscribes.
        assert isinstance(recorder, ApplicationRecorder), recorder
        with self._applying:
            began, after = self._rewinds, self.position
        with recorder.subscribe(gt=after) as subscription:
            self._subscription = subscription
            if self._stopping.is_set():  # stop() came before the subscription existed
                return False
            for note in subscription:
                if not self._advance([note], began):
                    return True
        return False

    def _resync(self) -> None:
        """Pull directly every `resync_seconds`: bounds the delay of an append whose NOTIFY
        found no listener (one indexed query, which usually finds nothing)."""
        while not self._stopping.wait(self._resync_seconds):
            try:
                self._catch_up()
            except Exception as error:
                self._failed(error)

    def _catch_up(self) -> None:
        while True:
            position = self.position
            notes = page_from(self.store, position, PAGE)
            if notes and not self._advance(notes, None):
                continue  # the model was folded again: read on from its position
            if sum(1 for note in notes if note.id > position) < PAGE:
                return

    def _advance(self, notes: Sequence[Notification], began: int | None) -> bool:
        """Apply the notes; False if the model found the log rewound and was folded again
        (the position is then the model's, and the subscription starts again from it), or
        if they come from a subscription `began` before a rewind (it read on from a
        position the log no longer holds: those notes may pass over new events)."""
        with self._applying:  # the two threads in turn, so a rewind is seen by both
            if began is not None and began != self._rewinds:
                return False
            try:
                reached = self._apply(notes)
            except LogRewound as rewound:
                self._rewinds += 1
                with self._moved:
                    self._position = rewound.position
                    self._moved.notify_all()
                self._stop_subscription()
                return False
        with self._moved:
            if reached > self._position:
                self._position = reached
                self._moved.notify_all()
        return True

    def _failed(self, error: Exception) -> None:
        self.errors += 1
        self.last_error = error

    def _stop_subscription(self) -> None:
        if self._subscription is not None:
            self._subscription.stop()
