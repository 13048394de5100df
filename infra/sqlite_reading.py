"""An embedded store's file read without the `eventsourcing` library, by a process that
only reads.

An embedded `planledger ready` or `plan list` is a process started for one read (agents
drive the ledger through a shell), and loading the library was about a fifth of such a
call (issue 19). Here its read model reads the SQLite file directly: the log as our
recorder reads it (the tables of infra.sqlite_schema), each event
decoded as ledger.sealing's mapper decodes it (the library's JSON transcodings, then
ledger.stored_form), and the read model's checkpoint read from the tables
infra.sqlite_checkpoints keeps.

Nothing here writes to the log, or makes a file but one: a checkpoint falling due (every
50,000 events) is saved as any reader saves it, through infra.sqlite_checkpoints'
recorder, loaded then. What this reader is not sure of, it refuses (`open_reading`'s
None, or `Unreadable`: an event in another form than the library's plain JSON, say a
compressed or enciphered store, or of a kind it does not know): the caller then asks the
store through the library (api.cli.calls), which answers as always.
tests/unit/test_sqlite_reading.py holds every event, page and answer read here equal to
the library's.
"""

import json
import os
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from planledger.infra.clock_ids import SteadyClock, SystemClock
from planledger.infra.secret import load_secret
from planledger.infra.sqlite_schema import EVENTS_TABLE, SELECT_END, select_log
from planledger.infra.sqlite_shape import NotAStore, check_store_file
from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.ledger.ports import Clock
from planledger.ledger.storage import (
    CHECKPOINT_TABLE,
    MEMORY,
    TRACKING_TABLE,
    checkpoint_path,
    is_postgres,
    sqlite_lock_timeout,
)
from planledger.ledger.stored_form import BY_TOPIC, event_from
from planledger.projections.readmodel import ReadModel

if TYPE_CHECKING:
    from eventsourcing.persistence import Notification, StoredEvent, Tracking

STORE_NAME = "planledger"  # ledger.store.EventStore.name (a test holds them equal)


class Unreadable(Exception):
    """Something in the file this reader does not read as the library would."""


class StoredNotification(NamedTuple):
    """An event at its log position, as stored: the library's `Notification`'s fields."""

    id: int
    originator_id: str
    originator_version: int
    topic: str
    state: bytes


def lock_timeout() -> float | None:
    """Seconds a read waits for another process's lock, the store's (None: a value that
    is no number, which the store's own opening words)."""
    try:
        return float(sqlite_lock_timeout())
    except ValueError:
        return None


def connect(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection to an existing SQLite file: never creates one (`mode=rw`)."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True,
                                 timeout=timeout, isolation_level=None,
                                 check_same_thread=False)
    connection.execute("PRAGMA query_only = ON")  # a reader: no statement of it writes
    return connection


class FileRecorder:
    """The library's recorder's reads of the log (`select_notifications`), on the file."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def select_notifications(
        self, start: int | None, limit: int, stop: int | None = None,
        topics: Sequence[str] = (), *, inclusive_of_start: bool = True,
    ) -> "Sequence[Notification]":
        statement, values = select_log(start, limit, stop, topics, inclusive_of_start)
        rows = self._connection.execute(statement, values).fetchall()
        # The same five fields as the library's Notification, which only they are read for.
        return cast("list[Notification]", [StoredNotification._make(row) for row in rows])

    def max_notification_id(self) -> int | None:
        row = self._connection.execute(SELECT_END).fetchone()
        return cast("int | None", row[0])


class EventDecoder:
    """ledger.sealing's mapper on an event stored as plain JSON (the library's transcoder,
    its default transcodings); anything else is Unreadable."""

    def __init__(self) -> None:
        self._decoder = json.JSONDecoder(object_hook=self._typed)

    @staticmethod
    def _typed(found: dict[str, Any]) -> Any:
        """The library's JSONTranscoder's object hook: a value of a registered type for a
        two-key object naming it (Application.register_transcodings: datetime, UUID and
        Decimal), else the object itself."""
        if len(found) != 2 or "_type_" not in found or "_data_" not in found:
            return found
        kind, data = found["_type_"], found["_data_"]
        if kind == "datetime_iso" and type(data) is str:
            return datetime.fromisoformat(data)
        if kind == "uuid_hex" and type(data) is str:
            from uuid import UUID
            return UUID(data)
        if kind == "decimal_str" and type(data) is str:
            from decimal import Decimal
            return Decimal(data)
        raise Unreadable(f"a value of an unknown type {kind!r}")

    def to_domain_event(self, stored_event: "StoredEvent") -> object:
        kind = BY_TOPIC.get(stored_event.topic)
        if kind is None:
            raise Unreadable(f"an event of an unknown kind {stored_event.topic!r}")
        if type(stored_event.state) is not bytes:
            raise Unreadable("an event not stored as bytes")
        try:
            state = self._decoder.decode(stored_event.state.decode("utf8"))
        except ValueError as error:  # UnicodeDecodeError and JSONDecodeError are both
            raise Unreadable(f"an event not stored as JSON: {error}") from None
        if type(state) is not dict or type(stored_event.originator_id) is not str:
            raise Unreadable("an event not stored as one JSON object")
        return event_from(kind, state, stored_event.originator_id,
                          stored_event.originator_version, getattr(kind, "class_version", 1))


class FileLog:
    """An embedded store's log as the read side reads it (ledger.notification_log's
    LogSource), from its file."""

    name = STORE_NAME

    def __init__(self, path: Path, timeout: float = 30) -> None:
        self._connection = connect(path, timeout)
        self.recorder = FileRecorder(self._connection)
        self.mapper = EventDecoder()

    def plan_of_step(self, step_id: StepId) -> PlanSlug | None:
        """The plan a step opened in (its stream's first event names it)."""
        row = self._connection.execute(
            f"SELECT rowid FROM {EVENTS_TABLE} WHERE originator_id = ? "
            "AND originator_version = 1", (step_id,)).fetchone()
        found = self.recorder.select_notifications(row[0], 1) if row else []
        plan = getattr(self.mapper.to_domain_event(found[0]), "plan", None) if found else None
        return PlanSlug(plan) if isinstance(plan, str) else None

    def forget(self, ids: Sequence[str]) -> None:
        """Nothing to let go of: nothing is cached here."""

    def forget_all(self) -> None:
        """Nothing to let go of: nothing is cached here."""

    def log_end(self) -> int:
        return self.recorder.max_notification_id() or 0

    def last_position(self) -> int | None:
        return None  # it appends nothing

    def newest_event_time(self) -> datetime | None:
        """When the log's newest event happened (ledger.store.EventStore's, for the clock)."""
        notes = self.recorder.select_notifications(self.log_end(), 1)
        event = self.mapper.to_domain_event(notes[0]) if notes else None
        moment = getattr(event, "timestamp", None)
        return moment if isinstance(moment, datetime) else None

    def close(self) -> None:
        self._connection.close()


class FileCheckpoints:
    """The read model's checkpoints (projections.checkpoints' Checkpoints) of an embedded
    store: read from infra.sqlite_checkpoints' file; saved, and dropped, through that
    module's recorder, opened when first needed. A read model reads them once, at its
    start: what the file held when this opened it is what is read (no file or no tables:
    no checkpoint)."""

    def __init__(self, db: str, timeout: float = 30) -> None:
        self.db = db
        path = checkpoint_path(db)
        self._connection = connect(path, timeout) if path.exists() else None
        if self._connection is not None and not self._tables_exist(self._connection):
            self._connection.close()
            self._connection = None
        self._writer: Any = None

    @staticmethod
    def _tables_exist(connection: sqlite3.Connection) -> bool:
        found = connection.execute(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
            (TRACKING_TABLE, CHECKPOINT_TABLE)).fetchone()
        return bool(found[0] == 2)

    def load_checkpoint(self, application_name: str) -> tuple[int, bytes] | None:
        """As SQLiteCheckpointRecorder.load_checkpoint: the state only at the position the
        tracking table vouches for."""
        if self._connection is None:
            return None
        self._connection.execute("BEGIN")  # both reads in one transaction, as the recorder's
        try:
            row = self._connection.execute(
                # As bytes whatever a hand at the file stored there: its MAC judges them.
                f"SELECT notification_id, CAST(state AS BLOB) FROM {CHECKPOINT_TABLE} "
                "WHERE application_name = ?", (application_name,)).fetchone()
            tracked = self.max_tracking_id(application_name)
        finally:
            self._connection.execute("COMMIT")
        if row is None or tracked is None or row[0] != tracked:
            return None
        return tracked, bytes(row[1])

    def max_tracking_id(self, application_name: str) -> int | None:
        if self._connection is None:
            return None
        row = self._connection.execute(
            f"SELECT MAX(notification_id) FROM {TRACKING_TABLE} WHERE application_name = ?",
            (application_name,)).fetchone()
        return row[0] if type(row[0]) is int else None

    def _recorder(self) -> Any:
        if self._writer is None:
            from planledger.infra.sqlite_checkpoints import sqlite_checkpoints

            self._writer = sqlite_checkpoints(self.db)
        return self._writer

    def save_checkpoint(self, tracking: "Tracking", state: bytes | memoryview) -> bool:
        return bool(self._recorder().save_checkpoint(tracking, state))

    def forget(self, application_name: str) -> None:
        self._recorder().forget(application_name)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
        if self._writer is not None:
            self._writer.close()


# The library's settings that change how events are stored (read from the environment by
# its Application): with any of them, events are not the plain JSON read here.
_STORED_FORM_SETTINGS = ("COMPRESSOR_TOPIC", "CIPHER_TOPIC", "CIPHER_KEY")


class Reading:
    """A read model on an embedded store's file (api.plain_answers' Readable), for a
    process that only reads: `reads`, the store's `secret` (read when first needed, as
    api.runtime.Runtime's) and `close`."""

    def __init__(self, db: str, clock: Clock | None = None, timeout: float = 30) -> None:
        self.db = db
        self.log = FileLog(Path(db).expanduser(), timeout)
        # As api.runtime's ledger_clock on SQLite: the machine's, held at or past the log's
        # newest event (`clock` replaces it: tests).
        clock = clock or SteadyClock(SystemClock(), floor=self.log.newest_event_time)
        self.reads = ReadModel(self.log, clock, secret=lambda: self.secret,
                               checkpoints=FileCheckpoints(db, timeout))

    @cached_property
    def secret(self) -> bytes:
        return load_secret(self.db)

    def close(self) -> None:
        self.reads.close()
        self.log.close()


def open_reading(db: str) -> Reading | None:
    """A reading of the embedded store `db` (resolved: ledger.storage.resolve_db), or None
    where the store is not an existing SQLite file holding plain JSON events."""
    if db == MEMORY or is_postgres(db) or not Path(db).expanduser().is_file():
        return None
    if any(os.environ.get(name) or os.environ.get(f"{STORE_NAME.upper()}_{name}")
           for name in _STORED_FORM_SETTINGS):
        return None
    try:
        check_store_file(db)
    except NotAStore:
        return None  # the library's door refuses it, in the words the command line uses
    timeout = lock_timeout()
    return Reading(db, timeout=timeout) if timeout is not None else None
