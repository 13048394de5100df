"""Fakes for the ledger's ports: a clock tests move by hand, ids tests can predict."""

import itertools
import threading
from datetime import UTC, datetime, timedelta

from ulid import ULID

from planledger.ledger.ports import Clock, IdGenerator

EPOCH = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)


class FakeClock(Clock):
    """A clock that stands still until a test advances it."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = moment


class SequentialIds(IdGenerator):
    """ULID-shaped ids in a predictable, increasing order."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self._counter = itertools.count(1)
        self._millis = int(start.timestamp() * 1000)
        self._lock = threading.Lock()

    def new_id(self) -> str:
        with self._lock:
            n = next(self._counter)
        millis = self._millis + n
        return str(ULID.from_bytes(millis.to_bytes(6, "big") + n.to_bytes(10, "big")))
