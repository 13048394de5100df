"""Checkpoints: a read model's state saved with its log position, in one transaction.

Each recorder is one of the `eventsourcing` library's tracking recorders with a table
beside its tracking table, so a checkpoint's state and its `Tracking` record commit
together or not at all. The tracking record only ever moves forward (the library refuses
a position at or below the recorded one), so a slower process cannot overwrite a newer
checkpoint with an older one, and a model restored from a checkpoint resumes exactly
after the position its state includes: nothing is applied twice, nothing is skipped.

Several processes following the same log fold the same state at the same position, so
they may share one checkpoint: a CLI process starts from whatever a server saved.

A recorder keeps a state's bytes as it was given them and trusts nothing in them: what
they hold, and when a process believes them (their MAC under the store's secret, the log
they name), is `projections.resume`'s.

Backends: in-process (`memory`), SQLite (a file beside the log, so the log's writers never
wait on a checkpoint), and PostgreSQL (`projections.pg_checkpoints`: two tables in the
log's own schema, made by `planledger db init` with the log's; every replica shares them).
"""

from abc import abstractmethod
from pathlib import Path
from typing import Any

from eventsourcing.persistence import IntegrityError, Tracking, TrackingRecorder
from eventsourcing.popo import POPOTrackingRecorder
from eventsourcing.sqlite import SQLiteDatastore, SQLiteTrackingRecorder

from planledger.ledger.storage import MEMORY, is_postgres

CHECKPOINT_TABLE = "readmodel_checkpoints"


class CheckpointRecorder(TrackingRecorder):
    """Saves and loads one checkpoint per upstream application."""

    @abstractmethod
    def save_checkpoint(self, tracking: Tracking, state: bytes | memoryview) -> bool:
        """Record `state` as of `tracking`; False when a checkpoint at or past that position
        is recorded already (the newer one stays)."""

    @abstractmethod
    def load_checkpoint(self, application_name: str) -> tuple[int, bytes] | None:
        """The newest checkpoint's position and state, or None."""

    @abstractmethod
    def forget(self, application_name: str) -> None:
        """Drop the checkpoint and its tracked position, so saving starts again from any
        position (a tracked position past the log's end would refuse every later save)."""

    def close(self) -> None:
        """Let go of whatever the recorder holds open (nothing, unless a subclass says)."""


class MemoryCheckpointRecorder(POPOTrackingRecorder, CheckpointRecorder):
    """Checkpoints kept in this process (tests, and `--db memory`)."""

    def __init__(self) -> None:
        super().__init__()
        self._states: dict[str, tuple[int, bytes]] = {}

    def save_checkpoint(self, tracking: Tracking, state: bytes | memoryview) -> bool:
        with self._database_lock:
            try:
                self._assert_tracking_uniqueness(tracking)
            except IntegrityError:
                return False
            self._insert_tracking(tracking)
            self._states[tracking.application_name] = (tracking.notification_id, bytes(state))
            return True

    def load_checkpoint(self, application_name: str) -> tuple[int, bytes] | None:
        with self._database_lock:
            return self._states.get(application_name)

    def forget(self, application_name: str) -> None:
        with self._database_lock:
            self._states.pop(application_name, None)
            self._max_tracking_ids.pop(application_name, None)


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
                f"SELECT notification_id, state FROM {CHECKPOINT_TABLE} "
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


def checkpoint_path(db: str) -> Path:
    """Where the checkpoints of the SQLite log at `db` live: `ledger.sqlite` keeps them in
    `ledger.views.sqlite`."""
    path = Path(db).expanduser()
    return path.with_name(f"{path.stem}.views{path.suffix or '.sqlite'}")


def open_checkpoints(db: str) -> CheckpointRecorder:
    """The checkpoint recorder that goes with the log named by `db` (see module doc)."""
    if db == MEMORY:
        return MemoryCheckpointRecorder()
    if is_postgres(db):
        # Imported here: the PostgreSQL driver costs an embedded store's every command-line
        # process a sixth of its start-up.
        from planledger.projections.pg_checkpoints import postgres_checkpoints
        return postgres_checkpoints(db)
    datastore = SQLiteDatastore(str(checkpoint_path(db)), lock_timeout=30,
                                originator_id_type="text")
    recorder = SQLiteCheckpointRecorder(datastore)
    recorder.create_table()
    return recorder
