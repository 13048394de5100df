"""Idempotent writes' first answers (`api.idempotency` writes and reads them, riding on the
write each answers: `ledger.execution.Attach`). They live here, with the store's other
kinds, so that reading any store never needs the interfaces.

An answer is kept beside the log, in a table of its own, written in the transaction of the
write it answers (`Answer`), for a retention window: it is derived data (what the write
answered), not a fact of the ledger. The write's own events are the facts, in the
hash-chained log. Stores written before kept each answer in the log as an event
(`AnswerRecorded`); those stay there, are still read, and no new one is written.
"""

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Protocol

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class AnswerRecorded:
    """The first answer to an idempotent write, as stores kept it before answers had a
    table of their own: an event of the log (a stream of its own). Not a ledger event:
    read models skip it. None is written now."""

    # Stored under the name it had when first written (see ledger.domain.events.TOPIC_PREFIX)
    TOPIC: ClassVar[str] = "api.idempotency:AnswerRecorded"

    originator_id: str
    originator_version: int
    timestamp: datetime
    session_id: str | None
    request: str
    status: int
    body: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    """The first answer to an idempotent write, under its key (a MAC of the acting session
    and the caller's key): the request it answered (a fingerprint), its status and body.

    Appended with the write's events (`EventStore.append`), it lands in their transaction
    or not at all, and a second answer under a live key fails the append as a conflict.
    `drops_before`, on a write: answers recorded before then have expired; the store may
    drop them as it writes this one, and one under this key gives way to it."""

    key: str
    scope: str | None
    request: str
    status: int
    body: dict[str, Any]
    recorded_at: datetime
    drops_before: datetime | None = None

    @classmethod
    def from_record(cls, record: AnswerRecorded) -> "Answer":
        """An answer a store written before kept in its log."""
        return cls(record.originator_id, record.session_id, record.request, record.status,
                   record.body, record.timestamp)

    def row(self) -> tuple[str, str | None, str, int, str, int]:
        """The answer as a table row: key, scope, request, status, body (JSON text, its
        keys in their order) and when it was recorded (microseconds since the epoch)."""
        return (self.key, self.scope, self.request, self.status,
                json.dumps(self.body, separators=(",", ":")), micros(self.recorded_at))

    @classmethod
    def from_row(cls, row: Any) -> "Answer":
        key, scope, request, status, body, recorded = row
        return cls(str(key), scope, str(request), int(status), json.loads(body),
                   _EPOCH + timedelta(microseconds=int(recorded)))


def micros(moment: datetime) -> int:
    """A moment as whole microseconds since the epoch (how answer tables keep time)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


class AnswerTable(Protocol):
    """A recorder that keeps answers beside its log: `insert_events(…, answers=[…])` writes
    them in the events' transaction, and this reads one back."""

    def select_answer(self, key: str) -> Answer | None: ...
