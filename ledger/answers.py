"""The record of an idempotent write's first answer, stored in the log beside the ledger's
events (`api.idempotency` writes and reads it, riding on the write it answers: see
`ledger.riders`). It lives here, with the store's other kinds, so that reading any log
never needs the interfaces."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar


@dataclass(frozen=True)
class AnswerRecorded:
    """The first answer to an idempotent write. Not a ledger event: read models skip it."""

    # Stored under the name it had when first written (see ledger.domain.events.TOPIC_PREFIX)
    TOPIC: ClassVar[str] = "api.idempotency:AnswerRecorded"

    originator_id: str
    originator_version: int
    timestamp: datetime
    session_id: str | None
    request: str
    status: int
    body: dict[str, Any]
