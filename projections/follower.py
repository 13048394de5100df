"""Tailing: keep a read model caught up with appends made by other processes.

A `LogFollower` runs one background thread that alternates two things: catch the model
up (`Followable.catch_up`, which reads and applies every new page), then wait until new
events may have been appended. Only the waiting differs between backends, so a backend
adds one small subclass that implements `wait_for_news`:

- `PollingFollower` (any backend; the one SQLite has) waits a fixed interval, so an
  append is seen within about `interval` plus the time to apply it;
- a PostgreSQL follower would wait on LISTEN/NOTIFY, waking as soon as an append commits
  (the library's subscriptions exist only there); it belongs in its own module.

The follower never applies events itself: the model's position decides what is new, and
the model applies each position exactly once, so a follower can stop, restart, or run
beside callers that pull on their own.
"""

import threading
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Protocol, Self

DEFAULT_INTERVAL = 0.05


class Followable(Protocol):
    """What a follower drives: anything that can pull the log's new events in."""

    def catch_up(self) -> int: ...


class LogFollower(ABC):
    """Keeps `model` caught up from a background thread until stopped."""

    def __init__(self, model: Followable, name: str = "log-follower") -> None:
        self.model = model
        self.name = name
        self.errors = 0
        self.last_error: BaseException | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @abstractmethod
    def wait_for_news(self, stopping: threading.Event) -> None:
        """Return when new events may be in the log, or soon after `stopping` is set."""

    def start(self) -> Self:
        if self._thread is not None:
            raise RuntimeError(f"{self.name} is running already")
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop and wait for the thread (it finishes the page it is applying)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self.model.catch_up()
            except Exception as error:  # a locked or restarting database: try again
                self.errors += 1
                self.last_error = error
            self.wait_for_news(self._stopping)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


class PollingFollower(LogFollower):
    """Looks for new events every `interval` seconds."""

    def __init__(
        self, model: Followable, interval: float = DEFAULT_INTERVAL, name: str = "log-poller"
    ) -> None:
        super().__init__(model, name)
        self.interval = interval

    def wait_for_news(self, stopping: threading.Event) -> None:
        stopping.wait(self.interval)
