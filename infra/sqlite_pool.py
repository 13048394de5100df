"""SQLite persistence: the library's own, with connections that keep their prepared statements
and commands that read and append in one transaction.

The library opens its SQLite connections with `cached_statements=True`, which Python reads
as a cache of ONE statement. Every command runs several (BEGIN, a SELECT per stream it
reads, INSERT, COMMIT or ROLLBACK), so each was parsed and planned again on every use:
about a fifth of a claim's time. This factory is the library's SQLite factory with one
change, the connection pool opening connections that cache `STATEMENT_CACHE` statements.
Selected by `ledger.storage` (`PERSISTENCE_MODULE`); tables and statements are the library's.

A command's reads and its append share one transaction (`UnitDatastore.unit`): it takes
SQLite's write lock first (BEGIN IMMEDIATE), so no other writer can move what it read before
its events commit, and its reads skip the library's per-read transaction (a connection from
the pool, BEGIN, ROLLBACK): a claim + complete cycle ran five read transactions and two
write transactions, and now runs two.
"""

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from eventsourcing.persistence import (
    DataError,
    IntegrityError,
    InterfaceError,
    InternalError,
    OperationalError,
    PersistenceError,
)
from eventsourcing.sqlite import (
    SQLITE3_DEFAULT_LOCK_TIMEOUT,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
    SQLiteFactory,
)
from eventsourcing.utils import Environment

STATEMENT_CACHE = 64


class CachingConnectionPool(SQLiteConnectionPool):
    """The library's pool; its connections cache prepared statements."""

    def _create_connection(self) -> SQLiteConnection:
        try:
            conn = sqlite3.connect(
                database=self.db_name, uri=True, check_same_thread=False,
                isolation_level=None,  # autocommit: transactions begin explicitly
                cached_statements=STATEMENT_CACHE,
                timeout=self.lock_timeout or SQLITE3_DEFAULT_LOCK_TIMEOUT,
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


# The library's error for each sqlite3 error, as its own transactions raise them (a
# conflicting insert must surface as its IntegrityError, which the ledger retries on).
_ERRORS: tuple[tuple[type[sqlite3.Error], type[PersistenceError]], ...] = (
    (sqlite3.IntegrityError, IntegrityError), (sqlite3.OperationalError, OperationalError),
    (sqlite3.DataError, DataError), (sqlite3.InterfaceError, InterfaceError),
    (sqlite3.InternalError, InternalError),
)


def _library_error(error: sqlite3.Error) -> PersistenceError:
    for raw, ours in _ERRORS:
        if isinstance(error, raw):
            return ours(error)
    return PersistenceError(error)


@contextmanager
def _library_errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as error:
        raise _library_error(error) from error


class UnitDatastore(SQLiteDatastore):
    """The library's datastore; inside `unit()`, every transaction on this thread joins the
    unit's one write transaction instead of opening its own."""

    def __init__(self, db_name: str, *, lock_timeout: int | None,
                 single_row_tracking: bool, originator_id_type: str) -> None:
        super().__init__(db_name, lock_timeout=lock_timeout,
                         single_row_tracking=single_row_tracking,
                         originator_id_type=originator_id_type)  # type: ignore[arg-type]
        self.pool.close()  # it never opened a connection: nothing used it yet
        self.pool = CachingConnectionPool(db_name=db_name, lock_timeout=lock_timeout)
        self._open = threading.local()

    @contextmanager
    def transaction(self, *, commit: bool) -> Iterator[SQLiteCursor]:
        cursor: SQLiteCursor | None = getattr(self._open, "cursor", None)
        if cursor is None:
            with super().transaction(commit=commit) as fresh:
                yield fresh
            return
        try:
            yield cursor  # the unit commits or rolls back, once, at its end
        except sqlite3.Error as error:  # (inline: this runs for every read of a command)
            raise _library_error(error) from error

    @contextmanager
    def unit(self) -> Iterator[None]:
        """One write transaction for everything inside the block: committed when the block
        ends, rolled back if it raises. Nested units join the outer one."""
        if getattr(self._open, "cursor", None) is not None:
            yield
            return
        with self.get_connection(commit=True) as connection:
            cursor = connection.cursor()
            committed = False
            try:
                with _library_errors():
                    cursor.execute("BEGIN IMMEDIATE")  # the write lock, before any read
                self._open.cursor = cursor
                yield
                with _library_errors():
                    connection.commit()
                committed = True
            finally:
                self._open.cursor = None
                if not committed:
                    with contextlib.suppress(sqlite3.Error):
                        connection.rollback()
                cursor.sqlite_cursor.close()


class Factory(SQLiteFactory):
    """The library's SQLite factory with the statement-caching, unit-aware datastore."""

    def __init__(self, env: Environment | dict[str, str] | None) -> None:
        super().__init__(env)
        library = self.datastore
        self.datastore = UnitDatastore(
            library.pool.db_name, lock_timeout=library.pool.lock_timeout,
            single_row_tracking=library.single_row_tracking,
            originator_id_type=library.originator_id_type)
        library.pool.close()  # it never opened a connection: nothing used it yet
