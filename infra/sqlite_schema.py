"""The embedded store's tables: the log and the snapshots, as our recorder
(infra.sqlite_recorder) writes them and every reader of the file (infra.sqlite_reading,
infra.sqlite_backup, infra.sqlite_shape) reads them. Standard library only, so a process
that only reads the file loads nothing else.

The shape is the one the `eventsourcing` library's own SQLite recorder gave these tables,
so a store written before planledger kept its own recorder opens as it was.
"""

from collections.abc import Sequence

from planledger.infra.store_format import FORMAT_TABLE

EVENTS_TABLE = "stored_events"  # the log: an event's position is its rowid
SNAPSHOTS_TABLE = "stored_snapshots"  # one stream state now and then, never a position
TABLES = frozenset({EVENTS_TABLE, SNAPSHOTS_TABLE})
COLUMNS = ("originator_id", "originator_version", "topic", "state")
_STREAM_KEY = "PRIMARY KEY (originator_id, originator_version)"
_DEFINITION = ("originator_id TEXT, originator_version INTEGER, topic TEXT, state BLOB, "
               f"{_STREAM_KEY}")

CREATE_EVENTS = f"CREATE TABLE IF NOT EXISTS {EVENTS_TABLE} ({_DEFINITION})"
# Without a rowid: a snapshot is found by its stream only.
CREATE_SNAPSHOTS = f"CREATE TABLE IF NOT EXISTS {SNAPSHOTS_TABLE} ({_DEFINITION}) WITHOUT ROWID"

# Which planledger wrote the file (infra.store_format): one row, raised, never lowered.
CREATE_FORMAT = (f"CREATE TABLE IF NOT EXISTS {FORMAT_TABLE} (id INTEGER PRIMARY KEY "
                 "CHECK (id = 1), format INTEGER NOT NULL, written_by TEXT NOT NULL)")
STAMP_FORMAT = (f"INSERT INTO {FORMAT_TABLE} (id, format, written_by) VALUES (1, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET format = excluded.format, "
                "written_by = excluded.written_by WHERE format < excluded.format")
SELECT_FORMAT = f"SELECT format, written_by FROM {FORMAT_TABLE} WHERE id = 1"

INSERT = "INSERT INTO {table} (originator_id, originator_version, topic, state) VALUES (?, ?, ?, ?)"
SELECT_STREAM = "SELECT originator_id, originator_version, topic, state FROM {table} "\
    "WHERE originator_id = ?"
_SELECT_LOG = f"SELECT rowid, originator_id, originator_version, topic, state FROM {EVENTS_TABLE}"
SELECT_END = f"SELECT MAX(rowid) FROM {EVENTS_TABLE}"
SELECT_STREAM_NAMES = f"SELECT originator_id FROM {EVENTS_TABLE} WHERE rowid > ? AND rowid <= ?"


def select_log(start: int | None, limit: int, stop: int | None, topics: Sequence[str],
               inclusive_of_start: bool) -> tuple[str, tuple[int | str, ...]]:
    """The statement and values that read the log's events from `start` (or after it) up to
    `stop`, of `topics` if any, at most `limit`: each row a position and an event's four
    columns (the library's `select_notifications`)."""
    conditions: list[str] = []
    values: list[int | str] = []
    if start is not None:
        conditions.append("rowid >= ?" if inclusive_of_start else "rowid > ?")
        values.append(start)
    if stop is not None:
        conditions.append("rowid <= ?")
        values.append(stop)
    if topics:
        conditions.append(f"topic IN ({', '.join('?' * len(topics))})")
        values.extend(topics)
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"{_SELECT_LOG}{where} ORDER BY rowid LIMIT ?", (*values, limit)
