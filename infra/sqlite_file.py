"""An SQLite file of the embedded store (its log, or its read models' checkpoints): the
connections and transactions, our own (of the `eventsourcing` library only its public error
classes are used).

Writes go through one connection, one unit at a time (`SQLiteFile.unit`): a unit takes
SQLite's write lock first (BEGIN IMMEDIATE), so no other writer can move what a command
read before its events commit, and every read and write on the same thread inside the block
joins its transaction. A claim + complete cycle runs two transactions, not the seven it
ran on the library's per-read and per-write ones. Units queue on a lock in this process
rather than on SQLite's busy timeout; another process's writer is waited for up to the
store's lock timeout.

Reads outside a unit take a connection from an idle list (made when none is idle), in
WAL mode, so they never wait for the writer. Every connection keeps `STATEMENT_CACHE`
prepared statements: a command runs several (BEGIN, a SELECT per stream, INSERT, COMMIT),
and parsing them again on every use was a large share of a claim (bench/findings.md).

An event loop may run a short command itself when the write lock is free
(`without_waiting`): handing it to a worker thread and back cost more than the command.
Only the first transaction of such a block may refuse to wait (`WouldWait`, raised before
anything is written, so the caller can run the whole block again elsewhere).

sqlite3's errors come out as the library's (`eventsourcing.persistence`: IntegrityError for
a conflict, OperationalError for a lock or a full disk), which the ledger and the interfaces
answer.
"""

import contextlib
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from eventsourcing.persistence import (
    ConnectionUnavailableError,
    DatabaseError,
    DataError,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    PersistenceError,
    ProgrammingError,
)

from planledger.ledger.storage import names_memory_sqlite
from planledger.ledger.store import WouldWait

STATEMENT_CACHE = 64
DEFAULT_LOCK_SECONDS = 5  # the library's default, where the settings give none
WRITER_WAIT_SECONDS = 5.0  # how long a unit waits for this process's other units
IDLE_READERS = 16  # read connections kept open between reads; more are closed after use
# After a write failed for want of disk space, writes are refused at once, before any page
# is written, until the disk has more room than it had then or this many seconds passed.
RETRY_FULL_SECONDS = 1.0

# Most specific first: sqlite3's DataError, IntegrityError ... are DatabaseErrors.
_LIBRARY_ERRORS: tuple[tuple[type[sqlite3.Error], type[PersistenceError]], ...] = (
    (sqlite3.InterfaceError, InterfaceError), (sqlite3.DataError, DataError),
    (sqlite3.OperationalError, OperationalError), (sqlite3.IntegrityError, IntegrityError),
    (sqlite3.InternalError, InternalError), (sqlite3.ProgrammingError, ProgrammingError),
    (sqlite3.NotSupportedError, NotSupportedError), (sqlite3.DatabaseError, DatabaseError),
)


def as_library_error(error: sqlite3.Error) -> PersistenceError:
    """sqlite3's `error` as the event-store library's error of the same kind."""
    for theirs, ours in _LIBRARY_ERRORS:
        if isinstance(error, theirs):
            return ours(error)
    return PersistenceError(error)


@contextmanager
def library_errors() -> Iterator[None]:
    """Inside the block, sqlite3's errors are raised as the library's."""
    try:
        yield
    except sqlite3.Error as error:
        raise as_library_error(error) from error


class SQLiteFile:
    """The store's file at `path`: read connections, the one write connection, and the
    units that write on it. `lock_seconds`: how long a write waits for another process to
    let go of the write lock (SQLite's busy timeout)."""

    def __init__(self, path: str, *, lock_seconds: int | None = None) -> None:
        if names_memory_sqlite(path):
            raise InterfaceError(f"{path!r} names an in-memory SQLite database; the "
                                 "in-memory store is --db memory")
        self.path = path
        self.wait_seconds = float(lock_seconds or DEFAULT_LOCK_SECONDS)
        self._wait_ms = int(self.wait_seconds * 1000)
        self._idle: deque[sqlite3.Connection] = deque()
        self._wal_checked = False
        self._closed = False
        self.open_units = threading.local()  # the unit's cursor, and whether it is eager
        self._writer_lock = threading.Lock()
        self._writer: sqlite3.Connection | None = None
        self._disk = DiskWatch(path)

    def connect(self) -> sqlite3.Connection:
        """A new connection to the file, in autocommit (transactions begin explicitly),
        in WAL mode, caching prepared statements."""
        with library_errors():
            try:
                conn = sqlite3.connect(self.path, uri=True, check_same_thread=False,
                                       isolation_level=None, timeout=self.wait_seconds,
                                       cached_statements=STATEMENT_CACHE)
            except TypeError as error:  # a path sqlite3 cannot take (a NUL in it, say)
                raise InterfaceError(error) from error
            if not self._wal_checked:
                self._use_wal(conn)
        return conn

    def _use_wal(self, conn: sqlite3.Connection) -> None:
        """Readers never wait for the writer: WAL, once per file (it is kept in the file)."""
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        self._wal_checked = True

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Cursor]:
        """A cursor for one statement that reads: the unit's inside a unit, else an idle
        read connection's (a single statement sees one state of the file: no BEGIN)."""
        cursor: sqlite3.Cursor | None = getattr(self.open_units, "cursor", None)
        if cursor is not None:
            yield cursor
            return
        conn = self._reader()
        try:
            with library_errors():
                yield conn.cursor()
        finally:
            self._put_back(conn)

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[sqlite3.Cursor]:
        """A cursor whose statements share one transaction: the unit's inside a unit; a
        unit of its own to write (`commit`); else a read transaction, so several
        statements see one state of the file."""
        cursor: sqlite3.Cursor | None = getattr(self.open_units, "cursor", None)
        if cursor is not None:
            yield cursor
        elif commit:
            with self.unit():
                yield self.open_units.cursor
        else:
            conn = self._reader()
            try:
                with library_errors():
                    cursor = conn.cursor()
                    cursor.execute("BEGIN")
                    try:
                        yield cursor
                    finally:
                        conn.rollback()
            finally:
                self._put_back(conn)

    def unit(self) -> "Unit":
        """One write transaction for everything inside the block on this thread: committed
        when the block ends, rolled back if it raises. Nested units join the outer one."""
        return Unit(self)

    def full(self) -> bool:
        """Whether writes are being refused at once for a full disk (DiskWatch)."""
        return self._disk.still_full()

    @contextmanager
    def without_waiting(self) -> Iterator[None]:
        """Inside the block, the first unit raises WouldWait instead of waiting for the
        write lock (this process's or the database's); the rest wait as usual."""
        self.open_units.eager = True
        try:
            yield
        finally:
            self.open_units.eager = False

    def busy_timeouts(self) -> set[int]:
        """The busy timeout (ms) each idle connection and the writer would wait with now."""
        conns = [*self._idle, *([self._writer] if self._writer is not None else [])]
        return {int(c.execute("PRAGMA busy_timeout").fetchone()[0]) for c in conns}

    def close(self) -> None:
        """Close every connection; one in use closes when it is put back."""
        self._closed = True
        while self._idle:
            self._idle.pop().close()
        with self._writer_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None

    def _reader(self) -> sqlite3.Connection:
        try:
            return self._idle.pop()
        except IndexError:
            return self.connect()

    def _put_back(self, conn: sqlite3.Connection) -> None:
        if self._closed or len(self._idle) >= IDLE_READERS or conn.in_transaction:
            conn.close()
        else:
            self._idle.append(conn)

    def take_writer(self, eager: bool) -> sqlite3.Connection:
        """Take the one connection this process writes on, one unit at a time.

        The caller gives it back with `let_go_of_writer`. The connection stays open,
        because opening one for every unit was a noticeable share of a claim
        (figure: bench/findings.md)."""
        if not self._writer_lock.acquire(timeout=0 if eager else WRITER_WAIT_SECONDS):
            message = "Timed out waiting for this process's other writes"
            if eager:
                raise WouldWait(message)
            raise ConnectionUnavailableError(message)
        if self._writer is None:
            try:
                self._writer = self.connect()
            except BaseException:
                self._writer_lock.release()
                raise
        return self._writer

    def let_go_of_writer(self, error: BaseException | None) -> None:
        """The unit on the writer ended (on `error`, if it failed): the disk hears of it."""
        try:
            if error is None:
                self._disk.cleared()
            elif isinstance(error, PersistenceError | sqlite3.Error):
                self._disk.noticed(error)
        finally:
            self._writer_lock.release()


class Unit:
    """`SQLiteFile.unit()`. A class, not a generator: every command runs one, and a
    generator's context manager cost a large share of the unit's own work
    (figure: bench/findings.md)."""

    __slots__ = ("_conn", "_log")

    def __init__(self, log: SQLiteFile) -> None:
        self._log = log
        self._conn: sqlite3.Connection | None = None  # None: joined an outer unit

    def __enter__(self) -> None:
        log = self._log
        units = log.open_units
        if getattr(units, "cursor", None) is not None:
            return
        eager = getattr(units, "eager", False)
        units.eager = False  # only a block's first transaction may refuse to wait
        log._disk.check()
        conn = log.take_writer(eager)
        try:
            units.cursor = _begin_writing(conn, eager, log._wait_ms)
        except BaseException as error:
            log.let_go_of_writer(error)
            raise
        self._conn = conn

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        conn = self._conn
        if conn is None:
            return
        units = self._log.open_units
        cursor: sqlite3.Cursor = units.cursor
        units.cursor = None
        failure = error
        try:
            cursor.close()
            if error is None:
                _commit(conn)
            else:
                conn.rollback()
        except sqlite3.Error as ending:
            failure = ending
            raise as_library_error(ending) from ending
        except BaseException as ending:
            failure = ending
            raise
        finally:
            self._log.let_go_of_writer(failure)
        if error is not None and isinstance(error, sqlite3.Error):
            raise as_library_error(error) from error


def _commit(conn: sqlite3.Connection) -> None:
    """COMMIT; where it fails (a full disk, say), the transaction is rolled back, so the
    writer begins the next unit clean."""
    try:
        conn.commit()
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the commit's error is the one to tell
                conn.rollback()
        raise


def _begin_writing(conn: sqlite3.Connection, eager: bool, usual_ms: int) -> sqlite3.Cursor:
    """A cursor in a transaction that holds the write lock. `eager`: raise WouldWait at
    once where it would wait for another connection to let go of the lock (the busy
    timeout is `usual_ms` again after)."""
    cursor = conn.cursor()
    if not eager:
        with library_errors():
            cursor.execute("BEGIN IMMEDIATE")
        return cursor
    cursor.execute("PRAGMA busy_timeout = 0")
    try:
        cursor.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        cursor.execute(f"PRAGMA busy_timeout = {usual_ms}")
        cursor.close()
        if "locked" in str(error) or "busy" in str(error):
            raise WouldWait(str(error)) from error
        raise as_library_error(error) from error  # not the lock: a disk error, say
    cursor.execute(f"PRAGMA busy_timeout = {usual_ms}")
    return cursor


class DiskWatch:
    """Refuses writes at once while the disk that failed one for want of space has no more
    room than it had then. A write that tries anyway writes pages to the journal until the
    disk refuses them, then throws them away. That is wasted work under the write lock,
    for every client retrying (figure: bench/findings.md)."""

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
