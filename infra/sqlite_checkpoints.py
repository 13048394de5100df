"""Checkpoints in SQLite: a file beside the log (`ledger.sqlite` keeps them in
`ledger.views.sqlite`), so the log's writers never wait on a checkpoint. The recorder keeps
the library's `tracking` table and a table of states beside it (see projections.checkpoints
for what a checkpoint recorder promises)."""

from typing import Any

from eventsourcing.persistence import IntegrityError, Tracking
from eventsourcing.sqlite import SQLiteDatastore, SQLiteTrackingRecorder

from planledger.ledger.storage import CHECKPOINT_TABLE, checkpoint_path
from planledger.projections.checkpoints import CheckpointRecorder

__all__ = ["CHECKPOINT_TABLE", "SQLiteCheckpointRecorder", "checkpoint_path",
           "sqlite_checkpoints"]


class SQLiteCheckpointRecorder(SQLiteTrackingRecorder, CheckpointRecorder):
    """Checkpoints in an SQLite file, beside the library's `tracking` table."""

    def construct_create_table_statements(self) -> list[str]:
        return [
            *super().construct_create_table_statements(),
            f"CREATE TABLE IF NOT EXISTS {CHECKPOINT_TABLE} ("
            "application_name TEXT PRIMARY KEY, notification_id INTEGER NOT NULL, "
            "state BLOB NOT NULL)",
        ]

    def save_checkpoint(self, tracking: Tracking, state: bytes | memoryview) -> bool:
        try:
            with self.datastore.transaction(commit=True) as cursor:
                self._insert_tracking(cursor, tracking)  # raises unless it moves forward
                cursor.execute(
                    f"INSERT OR REPLACE INTO {CHECKPOINT_TABLE} VALUES (?, ?, ?)",
                    (tracking.application_name, tracking.notification_id, state),
                )
        except IntegrityError:
            return False
        return True

    def load_checkpoint(self, application_name: str) -> tuple[int, bytes] | None:
        with self.datastore.transaction(commit=False) as cursor:
            cursor.execute(
                # As bytes whatever a hand at the file stored there: its MAC judges them.
                f"SELECT notification_id, CAST(state AS BLOB) FROM {CHECKPOINT_TABLE} "
                "WHERE application_name = ?", (application_name,))
            row: Any = cursor.fetchone()
            tracked = self._max_tracking_id(application_name, cursor)
        if row is None or row[0] != tracked:
            return None  # never a state whose position the tracking table does not vouch for
        return int(row[0]), bytes(row[1])

    def forget(self, application_name: str) -> None:
        with self.datastore.transaction(commit=True) as cursor:
            cursor.execute("DELETE FROM tracking WHERE application_name = ?",
                           (application_name,))
            cursor.execute(f"DELETE FROM {CHECKPOINT_TABLE} WHERE application_name = ?",
                           (application_name,))

    def close(self) -> None:
        self.datastore.close()


def sqlite_checkpoints(db: str) -> SQLiteCheckpointRecorder:
    """The checkpoint recorder of the SQLite log at `db` (its tables made if missing)."""
    datastore = SQLiteDatastore(str(checkpoint_path(db)), lock_timeout=30,
                                originator_id_type="text")
    recorder = SQLiteCheckpointRecorder(datastore)
    recorder.create_table()
    return recorder
