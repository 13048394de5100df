"""Checkpoints in SQLite: a file beside the log (`ledger.sqlite` keeps them in
`ledger.views.sqlite`), so the log's writers never wait on a checkpoint. The recorder keeps
the library's `tracking` table and a table of states beside it (see projections.checkpoints
for what a checkpoint recorder promises)."""

import sqlite3
from typing import Any

from eventsourcing.persistence import IntegrityError, Tracking

from planledger.infra.sqlite_file import SQLiteFile
from planledger.ledger.storage import CHECKPOINT_TABLE, TRACKING_TABLE, checkpoint_path
from planledger.projections.checkpoints import CheckpointRecorder

__all__ = ["CHECKPOINT_TABLE", "TRACKING_TABLE", "SQLiteCheckpointRecorder",
           "checkpoint_path", "sqlite_checkpoints"]

CREATE_STATEMENTS = (
    # The shape eventsourcing 9.5's tracking recorder gave this table, so files it made
    # read on; ours writes it with its own statements.
    f"CREATE TABLE IF NOT EXISTS {TRACKING_TABLE} (application_name TEXT, "
    "notification_id INTEGER, PRIMARY KEY (application_name)) WITHOUT ROWID",
    f"CREATE TABLE IF NOT EXISTS {CHECKPOINT_TABLE} (application_name TEXT PRIMARY KEY, "
    "notification_id INTEGER NOT NULL, state BLOB NOT NULL)",
)


class SQLiteCheckpointRecorder(CheckpointRecorder):
    """Checkpoints in an SQLite file: a tracked position and a state per application, on
    infra.sqlite_file's connections and transactions, with our tables and statements."""

    def __init__(self, file: SQLiteFile) -> None:
        self.file = file

    def create_table(self) -> None:
        with self.file.transaction(commit=True) as cursor:
            for statement in CREATE_STATEMENTS:
                cursor.execute(statement)

    def insert_tracking(self, tracking: Tracking) -> None:
        with self.file.transaction(commit=True) as cursor:
            if not _moved(cursor, tracking):
                raise IntegrityError(f"{tracking.application_name} is tracked at or past "
                                     f"{tracking.notification_id} already")

    def max_tracking_id(self, application_name: str) -> int | None:
        with self.file.transaction(commit=False) as cursor:
            return _tracked(cursor, application_name)

    def save_checkpoint(self, tracking: Tracking, state: bytes | memoryview) -> bool:
        try:
            with self.file.transaction(commit=True) as cursor:
                if not _moved(cursor, tracking):
                    return False
                cursor.execute(
                    f"INSERT OR REPLACE INTO {CHECKPOINT_TABLE} VALUES (?, ?, ?)",
                    (tracking.application_name, tracking.notification_id, state),
                )
        except IntegrityError:  # another process tracked it first
            return False
        return True

    def load_checkpoint(self, application_name: str) -> tuple[int, bytes] | None:
        with self.file.transaction(commit=False) as cursor:
            cursor.execute(
                # As bytes whatever a hand at the file stored there: its MAC judges them.
                f"SELECT notification_id, CAST(state AS BLOB) FROM {CHECKPOINT_TABLE} "
                "WHERE application_name = ?", (application_name,))
            row: Any = cursor.fetchone()
            tracked = _tracked(cursor, application_name)
        if row is None or row[0] != tracked:
            return None  # never a state whose position the tracking table does not vouch for
        return int(row[0]), bytes(row[1])

    def forget(self, application_name: str) -> None:
        with self.file.transaction(commit=True) as cursor:
            for table in (TRACKING_TABLE, CHECKPOINT_TABLE):
                cursor.execute(f"DELETE FROM {table} WHERE application_name = ?",
                               (application_name,))

    def close(self) -> None:
        self.file.close()


def _moved(cursor: sqlite3.Cursor, tracking: Tracking) -> bool:
    """Move the application's tracked position forward to the tracking's; False (nothing
    written) when it is there or past it already. The first write takes the file's write
    lock, so no other process moves it between the two statements."""
    asked = (tracking.notification_id, tracking.application_name, tracking.notification_id)
    cursor.execute(f"UPDATE {TRACKING_TABLE} SET notification_id = ? "
                   "WHERE application_name = ? AND notification_id < ?", asked)
    if _changed(cursor):
        return True
    cursor.execute(f"INSERT INTO {TRACKING_TABLE} SELECT ?, ? WHERE NOT EXISTS (SELECT 1 "
                   f"FROM {TRACKING_TABLE} WHERE application_name = ?)",
                   (tracking.application_name, tracking.notification_id,
                    tracking.application_name))
    return _changed(cursor)


def _changed(cursor: sqlite3.Cursor) -> bool:
    """Whether the last statement changed a row."""
    return cursor.rowcount > 0


def _tracked(cursor: sqlite3.Cursor, application_name: str) -> int | None:
    cursor.execute(f"SELECT MAX(notification_id) FROM {TRACKING_TABLE} "
                   "WHERE application_name = ?", (application_name,))
    row: Any = cursor.fetchone()
    return row[0] if row is not None and type(row[0]) is int else None


def sqlite_checkpoints(db: str) -> SQLiteCheckpointRecorder:
    """The checkpoint recorder of the SQLite log at `db` (its tables made if missing)."""
    recorder = SQLiteCheckpointRecorder(SQLiteFile(str(checkpoint_path(db)), lock_seconds=30))
    recorder.create_table()
    return recorder
