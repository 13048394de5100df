"""The simulation's time and ids: a virtual clock the world moves, ids counted from one."""

from datetime import UTC, datetime, timedelta

from ulid import ULID

from planledger.ledger.ports import Clock, IdGenerator

EPOCH = datetime(2030, 1, 1, tzinfo=UTC)


class VirtualClock(Clock):
    """Stands still until the world advances it; never runs backwards."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> datetime:
        self._now += timedelta(seconds=max(0.0, seconds))
        return self._now


class CountingIds(IdGenerator):
    """ULID-shaped ids in creation order: the same world makes the same ids."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self._count = 0
        self._millis = int(start.timestamp() * 1000)

    def new_id(self) -> str:
        self._count += 1
        n = self._count
        return str(ULID.from_bytes((self._millis + n).to_bytes(6, "big") + n.to_bytes(10, "big")))
