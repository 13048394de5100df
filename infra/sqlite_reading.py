"""Read an embedded store's SQLite file directly, without the `eventsourcing` library.

This is for processes that only read. Agents drive the ledger through a shell, so an
embedded `planledger ready` or `plan list` is a whole process started for one read.
Loading the library was a large part of such a call (figure: bench/findings.md). So here
the read model reads the SQLite file itself:

- the log, from the tables that our recorder uses (infra.sqlite_schema);
- each event, decoded as ledger.sealing's mapper decodes it (the library's JSON
  transcodings, then ledger.stored_form);
- the read model's checkpoint, from the tables of infra.sqlite_checkpoints.

This module never writes to the log. It creates at most one file: when a checkpoint falls
due (every 50,000 events), it is saved the way any reader saves it, through the recorder
of infra.sqlite_checkpoints, which is loaded only then.

When this reader is unsure, it refuses. `open_reading` returns None, or a read raises
`Unreadable`. That happens for events stored in another form than the library's plain
JSON (a compressed or encrypted store, say) and for event kinds it does not know. The
caller then opens the store through the library (api.cli.calls), which answers as always.
tests/unit/test_sqlite_reading.py checks that every event, page and answer read here
equals the library's.
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

STORE_NAME = "planledger"  # equals ledger.store.EventStore.name; a test checks this


class Unreadable(Exception):
    """The file holds something this reader cannot read exactly as the library would."""


class StoredNotification(NamedTuple):
    """A stored event at its log position, with the fields of the library's `Notification`."""

    id: int
    originator_id: str
    originator_version: int
    topic: str
    state: bytes


def lock_timeout() -> float | None:
    """How many seconds a read waits for another process's lock.

    The value is the store's own lock timeout. If that setting is not a number, this
    returns None, and the caller opens the store through the library, which reports the
    bad setting in its usual words."""
    try:
        return float(sqlite_lock_timeout())
    except ValueError:
        return None


def connect(path: Path, timeout: float) -> sqlite3.Connection:
    """Connect to an existing SQLite file. `mode=rw` makes sure no new file is created."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True,
                                 timeout=timeout, isolation_level=None,
                                 check_same_thread=False)
    connection.execute("PRAGMA query_only = ON")  # this is a reader; refuse any write
    return connection


class FileRecorder:
    """The log reads of the library's recorder (`select_notifications`), done on the file."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def select_notifications(
        self, start: int | None, limit: int, stop: int | None = None,
        topics: Sequence[str] = (), *, inclusive_of_start: bool = True,
    ) -> "Sequence[Notification]":
        statement, values = select_log(start, limit, stop, topics, inclusive_of_start)
        rows = self._connection.execute(statement, values).fetchall()
        # These are the five fields of the library's Notification; callers read no others.
        return cast("list[Notification]", [StoredNotification._make(row) for row in rows])

    def max_notification_id(self) -> int | None:
        row = self._connection.execute(SELECT_END).fetchone()
        return cast("int | None", row[0])


class EventDecoder:
    """Decode events as ledger.sealing's mapper does, for events stored as plain JSON.

    Plain JSON means the library's transcoder with its default transcodings. Any other
    stored form raises Unreadable."""

    def __init__(self) -> None:
        self._decoder = json.JSONDecoder(object_hook=self._typed)

    @staticmethod
    def _typed(found: dict[str, Any]) -> Any:
        """Do what the object hook of the library's JSONTranscoder does.

        A two-key object that names a registered type becomes a value of that type. The
        registered types are datetime, UUID and Decimal (Application.register_transcodings).
        Any other object is returned as it is."""
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
        except ValueError as error:  # covers UnicodeDecodeError and JSONDecodeError
            raise Unreadable(f"an event not stored as JSON: {error}") from None
        if type(state) is not dict or type(stored_event.originator_id) is not str:
            raise Unreadable("an event not stored as one JSON object")
        return event_from(kind, state, stored_event.originator_id,
                          stored_event.originator_version, getattr(kind, "class_version", 1))


class FileLog:
    """An embedded store's log, read from its file.

    It offers what the read side needs from a log (ledger.notification_log's LogSource)."""

    name = STORE_NAME

    def __init__(self, path: Path, timeout: float = 30) -> None:
        self._connection = connect(path, timeout)
        self.recorder = FileRecorder(self._connection)
        self.mapper = EventDecoder()

    def plan_of_step(self, step_id: StepId) -> PlanSlug | None:
        """The plan that a step belongs to, named by the first event of its stream."""
        row = self._connection.execute(
            f"SELECT rowid FROM {EVENTS_TABLE} WHERE originator_id = ? "
            "AND originator_version = 1", (step_id,)).fetchone()
        found = self.recorder.select_notifications(row[0], 1) if row else []
        plan = getattr(self.mapper.to_domain_event(found[0]), "plan", None) if found else None
        return PlanSlug(plan) if isinstance(plan, str) else None

    def forget(self, ids: Sequence[str]) -> None:
        """Do nothing: this log caches nothing."""

    def forget_all(self) -> None:
        """Do nothing: this log caches nothing."""

    def log_end(self) -> int:
        return self.recorder.max_notification_id() or 0

    def last_position(self) -> int | None:
        return None  # this log never appends

    def newest_event_time(self) -> datetime | None:
        """The time of the log's newest event, as ledger.store.EventStore gives it.

        The clock uses it so that time never runs backwards past the log."""
        notes = self.recorder.select_notifications(self.log_end(), 1)
        event = self.mapper.to_domain_event(notes[0]) if notes else None
        moment = getattr(event, "timestamp", None)
        return moment if isinstance(moment, datetime) else None

    def close(self) -> None:
        self._connection.close()


class FileCheckpoints:
    """The read model's checkpoints of an embedded store (projections.checkpoints).

    Checkpoints are read straight from the file of infra.sqlite_checkpoints. They are saved
    and dropped through that module's recorder, which is opened on first use. A read model
    reads its checkpoint once, when it starts, so what the file held when this object
    opened it is what counts. If there is no file, or it has no tables, there is no
    checkpoint."""

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
        """Load a checkpoint as SQLiteCheckpointRecorder.load_checkpoint does.

        A state counts only if the tracking table records the same position."""
        if self._connection is None:
            return None
        self._connection.execute("BEGIN")  # both reads in one transaction, as the recorder does
        try:
            row = self._connection.execute(
                # Read as bytes whatever was stored; the checkpoint's MAC checks them later.
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


# The library's settings that change how events are stored. Its Application reads them
# from the environment. If any is set, events are not the plain JSON this module reads.
_STORED_FORM_SETTINGS = ("COMPRESSOR_TOPIC", "CIPHER_TOPIC", "CIPHER_KEY")


class Reading:
    """A read model on an embedded store's file, for a process that only reads.

    It offers what api.plain_answers' Readable needs: `reads`, the store's `secret` and
    `close`. The secret is loaded on first use, as api.runtime.Runtime does."""

    def __init__(self, db: str, clock: Clock | None = None, timeout: float = 30) -> None:
        self.db = db
        self.log = FileLog(Path(db).expanduser(), timeout)
        # Like api.runtime's ledger_clock on SQLite: the machine's clock, never earlier than
        # the log's newest event. Tests pass their own `clock`.
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
    """Open a Reading of the embedded store `db`, or return None.

    `db` is already resolved (ledger.storage.resolve_db). The result is None unless the
    store is an existing SQLite file that holds plain JSON events."""
    if db == MEMORY or is_postgres(db) or not Path(db).expanduser().is_file():
        return None
    if any(os.environ.get(name) or os.environ.get(f"{STORE_NAME.upper()}_{name}")
           for name in _STORED_FORM_SETTINGS):
        return None
    try:
        check_store_file(db)
    except NotAStore:
        return None  # the library path then refuses it, in the command line's usual words
    timeout = lock_timeout()
    return Reading(db, timeout=timeout) if timeout is not None else None
