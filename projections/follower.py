"""Tailing: feed a read model the events other processes append, within a bounded delay.

A log follower reads the store's notification log after the position it has reached and
hands each page to the model's `apply` (`ReadModel.apply_notifications`), which applies
what lies above the model's own position, skips the rest, and returns the position
reached. The contract every follower keeps (the PostgreSQL one, `infra.pg_follower.PgFollower`,
included):

- `Follower(store, apply, position=0, ...)`, then `start()` (returns the follower): so the
  class is a `Tail`, which a read model is handed where its database wakes readers;
- `position`: the highest position `apply` has reported;
- `wait_for(position, timeout) -> bool`: block until that position is applied;
- `stop()`: end the background thread(s) and wait for them;
- a page is read from the position applied, inclusive, so the model checks at no cost
  that the log still holds its last event; where it does not (`LogRewound`: the model
  was folded again), the follower reads on from the position the model gives.

`LogFollower` is the base for followers that wake up and pull: a subclass only says how
to wait for news (`wait_for_news`). `PollingFollower` waits a fixed interval (SQLite has
no notifications, so an append is applied within about `interval`); a wake-up from the
database (PostgreSQL's LISTEN/NOTIFY, an adapter's) makes the delay one round trip
instead. `follow(model)` starts the model's `tail` if it was given one, else polls.
"""

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, Self

from planledger.ledger.notification_log import LogSource
from planledger.projections.log import PAGE, page_from
from planledger.projections.rewind import LogRewound

if TYPE_CHECKING:
    from eventsourcing.persistence import Notification

# Applies notifications above the model's position, in order, atomically with respect to
# its readers, skipping any at or below it; returns the position reached.
ApplyNotes = Callable[[Sequence["Notification"]], int]
DEFAULT_INTERVAL = 0.05


class Follower(Protocol):
    """What every follower offers (see the module doc)."""

    @property
    def position(self) -> int: ...

    def start(self) -> Self: ...

    def wait_for(self, position: int, timeout: float) -> bool: ...

    def stop(self) -> None: ...


class LogFollower(ABC):
    """Pulls new pages into `apply` from a background thread until stopped."""

    name = "log-follower"

    def __init__(self, store: LogSource, apply: ApplyNotes, position: int = 0) -> None:
        self.store = store
        self._apply = apply
        self._position = position
        self._moved = threading.Condition()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0
        self.last_error: Exception | None = None

    @abstractmethod
    def wait_for_news(self, stopping: threading.Event) -> None:
        """Return when new events may be in the log, or soon after `stopping` is set."""

    @property
    def position(self) -> int:
        with self._moved:
            return self._position

    def start(self) -> Self:
        if self._thread is not None:
            raise RuntimeError(f"{self.name} is running already")
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop and wait for the thread (it finishes the page it is applying)."""
        self._stopping.set()
        with self._moved:
            self._moved.notify_all()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def wait_for(self, position: int, timeout: float) -> bool:
        """Wait until `position` is applied; False if `timeout` passed (or stop) first."""
        with self._moved:
            return self._moved.wait_for(
                lambda: self._position >= position or self._stopping.is_set(), timeout
            ) and self._position >= position

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._pull()
            except Exception as error:  # a locked or restarting database: try again
                self.errors += 1
                self.last_error = error
            self.wait_for_news(self._stopping)

    def _pull(self) -> None:
        while not self._stopping.is_set():
            position = self.position
            notes = page_from(self.store, position, PAGE)
            try:
                reached = self._apply(notes) if notes else position
            except LogRewound as rewound:
                with self._moved:
                    self._position = rewound.position
                    self._moved.notify_all()
                continue
            with self._moved:
                self._position = max(self._position, reached)
                self._moved.notify_all()
            if sum(1 for note in notes if note.id > position) < PAGE:
                return

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PollingFollower(LogFollower):
    """Looks for new events every `interval` seconds."""

    name = "log-poller"

    def __init__(self, store: LogSource, apply: ApplyNotes, position: int = 0,
                 interval: float = DEFAULT_INTERVAL) -> None:
        super().__init__(store, apply, position)
        self.interval = interval

    def wait_for_news(self, stopping: threading.Event) -> None:
        stopping.wait(self.interval)


# A follower not yet started, for a store, an `apply` and the position to go on from.
Tail = Callable[[LogSource, ApplyNotes, int], Follower]


class Followed(Protocol):
    """What `follow` feeds: a read model (projections.readmodel.ReadModel)."""

    store: LogSource
    tail: Tail | None

    @property
    def position(self) -> int: ...

    def catch_up(self) -> int: ...

    def apply_notifications(self, notes: "Sequence[Notification]") -> int: ...


def follow(model: Followed, interval: float = DEFAULT_INTERVAL) -> Follower:
    """A started follower feeding `model`: its `tail` (PostgreSQL's LISTEN/NOTIFY, say), or
    else one polling every `interval`. The model is caught up first, so the follower's
    `position` is the end of the log as it stood when this returns (not wherever the model
    happened to be)."""
    model.catch_up()
    tail = model.tail or (lambda store, apply, position: PollingFollower(
        store, apply, position, interval))
    return tail(model.store, model.apply_notifications, model.position).start()
