"""Whether a file given as the embedded store is one, decided before anything is made.

`--db notes.txt` or `--db someone-elses.sqlite` used to be taken as a store: the event
store library creates its tables where they are missing, so a foreign SQLite database
got planledger's tables added beside its own and a secret file written next to it, and a
file that is no database at all answered every request "busy, retry shortly" for ever.
`check_store_file` refuses such a file at open, naming it and what it holds instead.

A store's file is an SQLite database whose tables are all the event store library's
(`stored_events`, `stored_snapshots`) or planledger's own (`planledger_…`); a new store
is a path that does not exist yet, an empty file or an SQLite database with no tables.
"""

import sqlite3
from pathlib import Path
from urllib.parse import quote

from planledger.infra.sqlite_schema import COLUMNS, EVENTS_TABLE, SELECT_FORMAT, TABLES
from planledger.infra.store_format import FORMAT_TABLE, refuse_newer

SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database
OWN_PREFIX = "planledger_"
EVENT_COLUMNS = frozenset(COLUMNS)


class NotAStore(ValueError):
    """The file given as the store is not one; the message names it and says why."""


def check_store_file(db: str) -> None:
    """Nothing when `db` is a store's file or a new one; NotAStore naming it otherwise."""
    path = Path(db).expanduser()
    if path.is_dir():
        raise NotAStore(f"{db} is a directory, not a planledger store: give --db a store's "
                        "file (or a new file's path, to make one)")
    try:
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as error:
        raise NotAStore(f"cannot read the store {db}: {error.strerror}") from None
    if not header:
        return
    if header != SQLITE_HEADER:
        raise NotAStore(f"{db} is not a planledger store: it is not an SQLite database "
                        "(give --db a store's file, or a new file's path to make one)")
    shape = _tables(path)
    if shape is None:
        return  # locked by a writer: the store itself answers, and it waits for the lock
    tables, written = shape
    foreign = sorted(t for t in tables if t not in TABLES
                     and not t.startswith((OWN_PREFIX, "sqlite_")))
    if foreign:
        raise NotAStore(f"{db} is not a planledger store: it is an SQLite database with "
                        f"other tables ({', '.join(foreign[:5])}); give --db a store's file")
    if EVENTS_TABLE in tables and not tables[EVENTS_TABLE] >= EVENT_COLUMNS:
        raise NotAStore(f"{db} is not a planledger store: its stored_events table lacks "
                        f"the event store's columns ({', '.join(sorted(EVENT_COLUMNS))})")
    refuse_newer(db, written)


def _tables(path: Path) -> tuple[dict[str, frozenset[str]], tuple[object, ...] | None] | None:
    """Each table of the database with its columns, and the format row (infra.store_format)
    if it has one, read without writing; None when a writer holds it locked or a read would
    need a write (WAL on a read-only disk)."""
    try:
        connection = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True,
                                     timeout=1.0)
    except sqlite3.Error as error:
        raise NotAStore(f"cannot open the store {path}: {error}") from None
    try:
        names = [row[0] for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        tables = {name: frozenset(row[0] for row in connection.execute(
            "SELECT name FROM pragma_table_info(?)", (name,))) for name in names}
        written = (connection.execute(SELECT_FORMAT).fetchone() if FORMAT_TABLE in tables
                   else None)
        return tables, written
    except sqlite3.OperationalError as error:
        if any(word in str(error) for word in ("locked", "busy", "readonly")):
            return None  # a store in WAL mode on a read-only disk: its own opening words it
        raise NotAStore(f"{path} is not a planledger store: {error}") from None
    except sqlite3.DatabaseError as error:  # "file is not a database", "malformed"
        raise NotAStore(f"{path} is not a planledger store: {error}") from None
    finally:
        connection.close()
