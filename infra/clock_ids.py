"""Production adapters for the ports: the clocks leases are decided by, and ULID ids.

A lease ends at the deciding server's `now` plus its length, and any server may later judge
it lapsed by its own `now`. So every `now` a ledger uses must come from one clock that
never runs backwards:

- on PostgreSQL, the database server's (`DatabaseClock`): every replica reads the same
  clock, whatever its own machine's says;
- on SQLite (one machine), the machine's clock held from running backwards, and never
  before the newest event in the log (`SteadyClock`): a clock stepped back cannot revive a
  lease that had lapsed, even in a process started after the step.
"""

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from planledger.ledger.ports import Clock, IdGenerator

if TYPE_CHECKING:  # a process that only reads has no store (infra.sqlite_reading)
    from planledger.ledger.store import EventStore

log = logging.getLogger(__name__)

# How often a replica reads the database's clock again; in between it adds the time its own
# monotonic clock says has passed (immune to steps of its wall clock; its drift over a
# second is microseconds).
RESAMPLE_SECONDS = 1.0


class SystemClock(Clock):
    def now(self) -> datetime:
        return datetime.now(UTC)


class SteadyClock(Clock):
    """`wall`, never running backwards, and never before `floor()` (read at the first
    `now`): a clock stepped back stands still until it catches up."""

    def __init__(self, wall: Clock, floor: Callable[[], datetime | None]) -> None:
        self._wall = wall
        self._floor = floor
        self._last: datetime | None = None
        self._lock = threading.Lock()

    def now(self) -> datetime:
        if self._last is None:
            floor = self._floor()
            with self._lock:
                if self._last is None:
                    self._last = floor or self._wall.now()
        moment = self._wall.now()
        with self._lock:
            assert self._last is not None
            self._last = max(self._last, moment)
            return self._last


class DatabaseClock(Clock):
    """The database server's clock: read (one round trip) at most every `resample` seconds;
    in between, the last reading plus the time `elapsed` (monotonic seconds) says has passed
    since it. A reading is placed at the middle of its round trip, so a replica's `now` is
    within half a round trip of the database's. When the database cannot be read, the last
    reading goes on (or, before any, `fallback`): a read route does not fail for the clock."""

    def __init__(
        self, read: Callable[[], datetime], fallback: Clock, *,
        resample: float = RESAMPLE_SECONDS, elapsed: Callable[[], float] = time.monotonic,
    ) -> None:
        self._read = read
        self._fallback = fallback
        self._resample = resample
        self._elapsed = elapsed
        self._reading: tuple[datetime, float] | None = None  # database time, and when
        self._next = float("-inf")  # when to read again
        self._reading_now = threading.Lock()  # one thread reads; the others go on

    def now(self) -> datetime:
        if self._elapsed() >= self._next and self._reading_now.acquire(blocking=False):
            try:
                self._take_reading()
            finally:
                self._reading_now.release()
        reading = self._reading
        if reading is None:
            return self._fallback.now()
        at, taken = reading
        return at + timedelta(seconds=self._elapsed() - taken)

    def _take_reading(self) -> None:
        before = self._elapsed()
        try:
            at = self._read()
        except Exception as error:  # whatever failed, the last reading goes on
            log.warning("cannot read the database's clock (%s); going on from the last "
                        "reading", str(error).strip() or type(error).__name__)
            self._next = self._elapsed() + self._resample
            return
        after = self._elapsed()
        self._reading = (at, (before + after) / 2)
        self._next = after + self._resample


class UlidGenerator(IdGenerator):
    def new_id(self) -> str:
        # Imported here, not at the top: python-ulid reads its version through
        # importlib.metadata, which is slow (bench/findings.md). A command that makes no
        # id, such as a read, should not pay for it.
        from ulid import ULID

        return str(ULID())


def ledger_clock(store: "EventStore", *, postgres: bool, wall: Clock | None = None) -> Clock:
    """The clock a ledger on `store` decides by (see the module): the database's on
    PostgreSQL, else `wall` (the machine's clock); steady, and floored at the log's newest
    event either way."""
    machine = wall or SystemClock()
    if postgres:
        from planledger.infra.pg_clock import database_time  # the driver only where it is needed

        machine = DatabaseClock(lambda: database_time(store), fallback=machine)
    return SteadyClock(machine, floor=store.newest_event_time)
