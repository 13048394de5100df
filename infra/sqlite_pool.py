"""SQLite persistence: the library's own, with connections that keep their prepared statements
and commands that read and append in one transaction.

The library opens its SQLite connections with `cached_statements=True`, which Python reads
as a cache of ONE statement. Every command runs several (BEGIN, a SELECT per stream it
reads, INSERT, COMMIT or ROLLBACK), so each was parsed and planned again on every use:
about a fifth of a claim's time. This factory is the library's SQLite factory with one
change, the connection pool opening connections that cache `STATEMENT_CACHE` statements.
Chosen for an SQLite store by `infra.persistence` (through `infra.sqlite_head`); tables and
statements are the library's, but for the table of idempotent answers (infra.sqlite_answers).

A command's reads and its append share one transaction (`UnitDatastore.unit`): it takes
SQLite's write lock first (BEGIN IMMEDIATE), so no other writer can move what it read before
its events commit, and its reads skip the library's per-read transaction (a connection from
the pool, BEGIN, ROLLBACK): a claim + complete cycle ran five read transactions and two
write transactions, and now runs two.

An event loop may run a short command itself when the write lock is free (`without_waiting`):
handing it to a worker thread and back cost more than the command, and eight such threads
taking turns at the interpreter lock cost more again. Only the first transaction of the
block may refuse to wait (`WouldWait`, raised before anything is written, so the caller
can run the whole block again elsewhere); once one has begun, the rest wait as usual.
"""

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from eventsourcing.persistence import (
    ConnectionUnavailableError,
    InterfaceError,
    OperationalError,
    PersistenceError,
    StoredEvent,
)
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
    SQLiteFactory,
    SQLiteTransaction,
)
from eventsourcing.utils import Environment

from planledger.infra import sqlite_answers
from planledger.ledger.answers import Answer
from planledger.ledger.store import WouldWait

STATEMENT_CACHE = 64
# After a write failed for want of disk space, writes are refused at once, before any page
# is written, until the disk has more room than it had then or this many seconds passed.
RETRY_FULL_SECONDS = 1.0


class CachingConnectionPool(SQLiteConnectionPool):
    """The library's pool; its connections cache prepared statements."""

    @property
    def wait_seconds(self) -> float:
        """How long a connection waits for another to let go of the write lock (SQLite's
        busy timeout)."""
        return self.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT

    def create_connection(self) -> SQLiteConnection:
        """A connection of the pool's kind that the pool does not hand out."""
        return self._create_connection()

    def _create_connection(self) -> SQLiteConnection:
        try:
            conn = sqlite3.connect(
                database=self.db_name, uri=True, check_same_thread=False,
                isolation_level=None,  # autocommit: transactions begin explicitly
                cached_statements=STATEMENT_CACHE, timeout=self.wait_seconds,
            )
        except (sqlite3.Error, TypeError) as error:
            raise InterfaceError(error) from error
        if not self.is_sqlite_memory_mode and not self.is_journal_mode_wal:
            self._use_wal(conn)
        conn.row_factory = sqlite3.Row
        return SQLiteConnection(sqlite_conn=conn, max_age=self.max_age)

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Readers never wait for the writer: WAL, as the library sets it."""
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
            self.journal_mode_was_changed_to_wal = True
        self.is_journal_mode_wal = True


class _WriteLockFirst(SQLiteTransaction):
    """The library's transaction (its commit, rollback and error mapping), begun with the
    write lock taken (BEGIN IMMEDIATE) instead of at the first write. `eager` (given the
    connection's usual busy timeout, to put back), it raises WouldWait at once where it
    would wait for another connection to let go of the lock."""

    def __init__(self, connection: SQLiteConnection, *, eager: bool, usual_ms: int) -> None:
        super().__init__(connection, commit=True)
        self.eager, self.usual_ms = eager, usual_ms

    def __enter__(self) -> SQLiteCursor:
        cursor = self.connection.cursor()
        if not self.eager:
            _begin(cursor)
            return cursor
        usual = self.usual_ms
        cursor.execute("PRAGMA busy_timeout = 0")
        try:
            _begin(cursor)
        except OperationalError as error:
            cursor.execute(f"PRAGMA busy_timeout = {usual}")
            cursor.sqlite_cursor.close()
            if "locked" in str(error) or "busy" in str(error):
                raise WouldWait(str(error)) from error
            raise  # not the lock (a disk error, say): the caller's usual error handling
        cursor.execute(f"PRAGMA busy_timeout = {usual}")
        return cursor


def _begin(cursor: SQLiteCursor) -> None:
    try:
        cursor.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:  # still locked by another process
        raise OperationalError(error) from error


class DiskWatch:
    """Refuses writes at once while the disk that failed one for want of space has no more
    room than it had then. A write that tries anyway writes pages to the journal until the
    disk refuses them, then throws them away: 15 ms of work under the write lock (2.3 s
    while each refusal also logged a traceback), for every client retrying."""

    def __init__(self, db_name: str) -> None:
        self._where = os.path.dirname(os.path.abspath(db_name))
        self._full: tuple[int, float] | None = None  # free bytes then, and when
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise the disk's last refusal again if nothing suggests it would not recur."""
        if self.still_full():
            raise OperationalError("database or disk is full (no space freed since)")

    def still_full(self) -> bool:
        """Whether a write failed for want of space, and no room was made since."""
        with self._lock:
            full = self._full
        if full is None:
            return False
        free_then, when = full
        return time.monotonic() - when < RETRY_FULL_SECONDS and self._free() <= free_then

    def noticed(self, error: BaseException) -> None:
        """What a write that failed says about the disk."""
        text = str(error).lower()
        if "disk is full" in text or "no space" in text:
            with self._lock:
                self._full = (self._free(), time.monotonic())

    def cleared(self) -> None:
        if self._full is not None:
            with self._lock:
                self._full = None

    def _free(self) -> int:
        try:
            found = os.statvfs(self._where)
        except OSError:
            return -1  # unknown: never counted as "no more room than then"
        return found.f_bavail * found.f_frsize


class UnitDatastore(SQLiteDatastore):
    """The library's datastore; inside `unit()`, every transaction on this thread joins the
    unit's one write transaction instead of opening its own."""

    def __init__(self, db_name: str, *, lock_timeout: int | None,
                 single_row_tracking: bool, originator_id_type: str) -> None:
        super().__init__(db_name, lock_timeout=lock_timeout,
                         single_row_tracking=single_row_tracking,
                         originator_id_type=originator_id_type)  # type: ignore[arg-type]
        self.pool.close()  # it never opened a connection: nothing used it yet
        self.pool = pool = CachingConnectionPool(db_name=db_name, lock_timeout=lock_timeout)
        self._wait_ms = int(pool.wait_seconds * 1000)
        self.open_units = threading.local()
        self._pool = pool
        self._writer_lock = threading.Lock()
        self._writer_connection: SQLiteConnection | None = None
        self._disk = None if pool.is_sqlite_memory_mode else DiskWatch(db_name)

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[SQLiteCursor]:
        cursor: SQLiteCursor | None = getattr(self.open_units, "cursor", None)
        if cursor is None:
            with super().transaction(commit=commit) as fresh:
                yield fresh
        else:  # the unit commits or rolls back, and maps what failed, once, at its end
            yield cursor

    def unit(self) -> "_Unit":
        """One write transaction for everything inside the block: committed when the block
        ends, rolled back if it raises. Nested units join the outer one."""
        return _Unit(self)

    def full(self) -> bool:
        """Whether writes are being refused at once for a full disk (DiskWatch)."""
        return self._disk is not None and self._disk.still_full()

    @contextmanager
    def without_waiting(self) -> Iterator[None]:
        """Inside the block, the first unit raises WouldWait instead of waiting for the
        write lock (this process's or the database's); the rest wait as usual."""
        self.open_units.eager = True
        try:
            yield
        finally:
            self.open_units.eager = False

    def _take_writer(self, eager: bool) -> SQLiteConnection:
        """The one connection this process writes on, one unit at a time (release
        `_writer_lock` after): units queue here (as long as the pool would have let them)
        rather than on SQLite's busy timeout. Kept open, not taken from the pool and put
        back for every unit, which cost a tenth of a claim."""
        if not self._writer_lock.acquire(timeout=0 if eager else self._pool.pool_timeout):
            message = "Timed out waiting for return of writer"
            if eager:
                raise WouldWait(message)
            raise ConnectionUnavailableError(message)
        connection = self._writer_connection
        if connection is None or connection.closed:
            try:
                connection = self._writer_connection = self._pool.create_connection()
            except BaseException:
                self._writer_lock.release()
                raise
        return connection

    def close(self) -> None:
        with self._writer_lock:
            if self._writer_connection is not None:
                self._writer_connection.close()
                self._writer_connection = None
        super().close()


class _Unit:
    """`UnitDatastore.unit()`. A class, not a generator: every command runs one, and a
    generator's context manager cost a fifth of the unit's own work."""

    __slots__ = ("_datastore", "_transaction")

    def __init__(self, datastore: UnitDatastore) -> None:
        self._datastore = datastore
        self._transaction: _WriteLockFirst | None = None  # None: joined an outer unit

    def __enter__(self) -> None:
        datastore = self._datastore
        units = datastore.open_units
        if getattr(units, "cursor", None) is not None:
            return
        eager = getattr(units, "eager", False)
        units.eager = False  # only a block's first transaction may refuse to wait
        disk = datastore._disk
        if disk is not None:
            disk.check()
        connection = datastore._take_writer(eager)
        try:
            transaction = _WriteLockFirst(connection, eager=eager,
                                          usual_ms=datastore._wait_ms)
            units.cursor = transaction.__enter__()
        except BaseException as error:
            self._failed(error)
            raise
        self._transaction = transaction

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        transaction = self._transaction
        if transaction is None:
            return
        datastore = self._datastore
        units = datastore.open_units
        cursor: SQLiteCursor = units.cursor
        units.cursor = None
        try:
            cursor.sqlite_cursor.close()
        except BaseException as closing:  # the block's error now (it is rolled back)
            kind, error, trace = type(closing), closing, closing.__traceback__
        try:
            # Commits, or rolls back and raises the block's error again (mapped to the
            # library's errors as its transactions map them).
            transaction.__exit__(kind, error, trace)
        except BaseException as failure:
            self._failed(failure)
            raise
        try:
            if datastore._disk is not None:
                datastore._disk.cleared()
        finally:
            datastore._writer_lock.release()

    def _failed(self, error: BaseException) -> None:
        """The unit ends on `error`: the disk hears of a database's failure, and the
        writer is let go."""
        datastore = self._datastore
        try:
            if datastore._disk is not None and isinstance(error, PersistenceError
                                                          | sqlite3.Error):
                datastore._disk.noticed(error)
        finally:
            datastore._writer_lock.release()


class UnitRecorder(SQLiteApplicationRecorder):
    """The library's recorder; inside a unit, events are inserted and the log's end is read
    on the unit's cursor directly: the library's way, a transaction block that the unit
    then joins, cost as much as the SELECT of the log's end (asked once per unit, see
    ledger.followed). Idempotent answers go to their own table in the same transaction
    (infra.sqlite_answers)."""

    datastore: "UnitDatastore"

    def construct_create_table_statements(self) -> list[str]:
        return [*super().construct_create_table_statements(), *sqlite_answers.CREATE]

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs) if stored_events else []
        answers: Sequence[Answer] = kwargs.get("answers", ())
        if answers:
            sqlite_answers.insert_answers(c.sqlite_cursor, answers)
        return ids

    def select_answer(self, key: str) -> Answer | None:
        """The answer kept under `key` (ledger.answers.AnswerTable), in a unit its cursor's."""
        with self.datastore.transaction(commit=False) as c:
            return sqlite_answers.select_answer(c.sqlite_cursor, key)

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        cursor: SQLiteCursor | None = getattr(self.datastore.open_units, "cursor", None)
        if cursor is None:
            return super().insert_events(stored_events, **kwargs)
        return self._insert_events(cursor, stored_events, **kwargs)

    def max_notification_id(self) -> int:
        cursor: SQLiteCursor | None = getattr(self.datastore.open_units, "cursor", None)
        if cursor is None:
            return super().max_notification_id()
        found = cursor.sqlite_cursor.execute(self.select_max_notification_id_statement)
        return int(found.fetchone()[0] or 0)

    def streams_appended(self, after: int, upto: int) -> list[str]:
        """The stream of each event at the positions after..upto, by name only: a unit
        that follows a new 1,000-step plan read its 2,001 events whole, states and all,
        to learn which streams moved (30 ms of the write lock)."""
        statement = (f"SELECT originator_id FROM {self.events_table_name} "
                     "WHERE rowid > ? AND rowid <= ?")
        with self.datastore.transaction(commit=False) as c:  # the unit's, inside one
            rows = c.sqlite_cursor.execute(statement, (after, upto)).fetchall()
        return [str(row[0]) for row in rows]


class Factory(SQLiteFactory):
    """The library's SQLite factory with the statement-caching, unit-aware datastore."""

    application_recorder_class = UnitRecorder

    def __init__(self, env: Environment | dict[str, str] | None) -> None:
        super().__init__(env)
        library = self.datastore
        self.datastore = UnitDatastore(
            library.pool.db_name, lock_timeout=library.pool.lock_timeout,
            single_row_tracking=library.single_row_tracking,
            originator_id_type=library.originator_id_type)
        library.pool.close()  # it never opened a connection: nothing used it yet
