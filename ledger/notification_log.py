"""The log by position, for readers outside the store: pages of events as they are stored,
their decoding, an import's insert, and the log's signed head.

The read side pages the log to fold it, the replays export and import recordings, the
audit re-hashes every event as stored and checks the signed head. They do it through
these functions; only this module and the store's own adapters (`ledger.store`,
`ledger.sealing`, `infra/`) touch the library's recorder and mapper
(tests/unit/test_layers.py holds the rest of the code to that).
"""

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from planledger.ledger.log_head import KeepsHead, SignedHead

if TYPE_CHECKING:  # the read side reads a log without loading the library (LogSource)
    from eventsourcing.persistence import Notification, StoredEvent

    from planledger.ledger.domain.ids import PlanSlug, StepId
    from planledger.ledger.store import EventStore

Positioned = tuple[int, object]
Decoder = Callable[["StoredEvent"], object]  # a stored event to its domain event
PAGE = 1000  # events a reader takes at once


class NoteRecorder(Protocol):
    """The part of the library's recorder a log's reader uses."""

    def select_notifications(
        self, start: int | None, limit: int, stop: int | None = None,
        topics: Sequence[str] = (), *, inclusive_of_start: bool = True,
    ) -> "Sequence[Notification]": ...

    def max_notification_id(self) -> int | None: ...


class NoteDecoder(Protocol):
    """The part of the library's mapper a log's reader uses."""

    def to_domain_event(self, stored_event: "StoredEvent") -> object: ...


class LogSource(Protocol):
    """What the read side (projections) reads a log through: the store (ledger.store), or
    an embedded store's file read without the library by a process that only reads
    (infra.sqlite_reading)."""

    @property
    def name(self) -> str: ...
    @property
    def recorder(self) -> NoteRecorder: ...
    @property
    def mapper(self) -> NoteDecoder: ...

    def plan_of_step(self, step_id: "StepId") -> "PlanSlug | None": ...

    def log_end(self) -> int: ...

    def last_position(self) -> int | None: ...

    def forget(self, ids: Sequence[str]) -> None: ...

    def forget_all(self) -> None: ...


def page_after(
    store: LogSource, after: int, limit: int = PAGE, stop: int | None = None
) -> "list[Notification]":
    """Up to `limit` events as stored after position `after` (and at or before `stop`)."""
    return list(store.recorder.select_notifications(
        start=after, limit=limit, stop=stop, inclusive_of_start=False))


def page_from(
    store: LogSource, position: int, limit: int = PAGE
) -> "list[Notification]":
    """The event at `position`, if the log holds one, then up to `limit` events after it:
    a reader checks the first is still the last one it read (projections.rewind)."""
    if position <= 0:
        return page_after(store, 0, limit)
    return list(store.recorder.select_notifications(
        start=position, limit=limit + 1, inclusive_of_start=True))


def decoder(store: LogSource) -> Decoder:
    """How the store turns a stored event into its domain event (its chain key removed)."""
    return store.mapper.to_domain_event


def decode(store: LogSource, notes: "Sequence[Notification]") -> list[Positioned]:
    """Each stored event of a page as (position, domain event)."""
    to_event = store.mapper.to_domain_event
    return [(note.id, to_event(note)) for note in notes]


def insert_stored(store: "EventStore", stored: "Sequence[StoredEvent]") -> None:
    """Insert events exactly as given (already sealed: an admitted recording's, a replay's
    own log), in the enclosing `store.transaction()` if any; the streams' versions must
    be free (a taken one is the store's ConflictError)."""
    with store.transaction():
        store.recorder.insert_events(list(stored))


def keeps_head(store: "EventStore") -> bool:
    """Whether the store signs its log's head (SQLite and PostgreSQL; not in memory)."""
    return isinstance(store.recorder, KeepsHead)


def read_head(store: "EventStore") -> SignedHead | None:
    """The log's signed head as stored (None: none yet, or a store that keeps none)."""
    recorder = store.recorder
    return recorder.read_head() if isinstance(recorder, KeepsHead) else None


def head_began(store: "EventStore") -> bool:
    """Whether the store ever kept a signed head (KeepsHead.head_began; True for a store
    that keeps none, so nothing is excused)."""
    recorder = store.recorder
    return not isinstance(recorder, KeepsHead) or recorder.head_began()


def sign_heads_with(store: "EventStore", key: Callable[[], bytes | None]) -> None:
    """Give a store that signs its head the key to sign with (read when first needed)."""
    recorder = store.recorder
    if isinstance(recorder, KeepsHead):
        recorder.head_key = key
