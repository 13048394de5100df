"""Production adapters for the ports: the system clock and ULID ids."""

from datetime import UTC, datetime

from ulid import ULID

from ledger.ports import Clock, IdGenerator


class SystemClock(Clock):
    def now(self) -> datetime:
        return datetime.now(UTC)


class UlidGenerator(IdGenerator):
    def new_id(self) -> str:
        return str(ULID())
