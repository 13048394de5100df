"""Checkpoints on PostgreSQL: two tables in the log's own schema, beside the library's
tracking table, made by `planledger db init` with the log's; every replica of the log
shares them (see projections.checkpoints for what a checkpoint recorder promises). A module
of its own, imported only for a PostgreSQL log, so an embedded store never loads the
PostgreSQL driver."""

from typing import Any

from eventsourcing.persistence import IntegrityError, Tracking
from eventsourcing.postgres import PostgresDatastore, PostgresFactory, PostgresTrackingRecorder
from eventsourcing.utils import Environment
from psycopg.sql import SQL, Identifier

from planledger.ledger.storage import store_settings
from planledger.ledger.store import EventStore
from planledger.projections.checkpoints import CheckpointRecorder

# Beside the log's own tables, so named after the application like them.
PG_CHECKPOINT_TABLE = f"{EventStore.name.lower()}_readmodel_checkpoints"
PG_TRACKING_TABLE = f"{EventStore.name.lower()}_readmodel_tracking"


class PostgresCheckpointRecorder(PostgresTrackingRecorder, CheckpointRecorder):
    """Checkpoints in the log's PostgreSQL schema, beside the library's tracking table."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        super().__init__(datastore, tracking_table_name=PG_TRACKING_TABLE)
        table = (Identifier(datastore.schema), Identifier(PG_CHECKPOINT_TABLE))
        self.sql_create_statements.append(SQL(
            "CREATE TABLE IF NOT EXISTS {0}.{1} (application_name text PRIMARY KEY, "
            "notification_id bigint NOT NULL, state bytea NOT NULL)").format(*table))
        self._upsert = SQL(
            "INSERT INTO {0}.{1} VALUES (%s, %s, %s) ON CONFLICT (application_name) DO "
            "UPDATE SET notification_id = EXCLUDED.notification_id, state = EXCLUDED.state"
        ).format(*table)
        self._forget = [SQL("DELETE FROM {0}.{1} WHERE application_name = %s").format(
            Identifier(datastore.schema), Identifier(name))
            for name in (PG_TRACKING_TABLE, PG_CHECKPOINT_TABLE)]
        self._select = SQL(
            "SELECT notification_id, state FROM {0}.{1} WHERE application_name = %s"
        ).format(*table)

    def save_checkpoint(self, tracking: Tracking, state: bytes | memoryview) -> bool:
        try:
            with self.datastore.transaction(commit=True) as cursor:
                self._insert_tracking(cursor, tracking)  # raises unless it moves forward
                cursor.execute(self._upsert, (tracking.application_name,
                                              tracking.notification_id, state))
        except IntegrityError:
            return False
        return True

    def load_checkpoint(self, application_name: str) -> tuple[int, bytes] | None:
        with self.datastore.transaction(commit=False) as cursor:
            cursor.execute(self._select, (application_name,))
            row: Any = cursor.fetchone()
            tracked = self._max_tracking_id(application_name, cursor)
        if row is None or row["notification_id"] != tracked:
            return None  # never a state whose position the tracking table does not vouch for
        return int(row["notification_id"]), bytes(row["state"])

    def forget(self, application_name: str) -> None:
        with self.datastore.transaction(commit=True) as cursor:
            for statement in self._forget:
                cursor.execute(statement, (application_name,))

    def close(self) -> None:
        self.datastore.close()


def postgres_checkpoints(db: str, *, create: bool = False) -> PostgresCheckpointRecorder:
    """The checkpoint recorder of the PostgreSQL log at `db`, on a pool of its own (one
    connection: it saves rarely); `create` makes its tables (`planledger db init` does)."""
    settings = {**store_settings(db), "POSTGRES_POOL_SIZE": "1", "POSTGRES_MAX_OVERFLOW": "1"}
    factory = PostgresFactory(Environment(EventStore.name, settings))
    recorder = PostgresCheckpointRecorder(factory.datastore)
    if create:
        recorder.create_table()
    return recorder
