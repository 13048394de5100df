"""Checkpoints on PostgreSQL: two tables in the log's own schema (tracked positions and
states, written by our own statements on the library's datastore), made by `planledger db
init` with the log's; every replica of the log shares them (see projections.checkpoints
for what a checkpoint recorder promises). A module of its own, imported only for a
PostgreSQL log, so an embedded store never loads the PostgreSQL driver."""

from typing import Any

from eventsourcing.persistence import IntegrityError, Tracking
from eventsourcing.postgres import PostgresDatastore
from eventsourcing.utils import Environment
from psycopg import Cursor
from psycopg.sql import SQL, Composed, Identifier

from planledger.infra import pg_connect
from planledger.ledger.storage import store_settings
from planledger.ledger.store import EventStore
from planledger.projections.checkpoints import CheckpointRecorder

# Beside the log's own tables, so named after the application like them.
PG_CHECKPOINT_TABLE = f"{EventStore.name.lower()}_readmodel_checkpoints"
PG_TRACKING_TABLE = f"{EventStore.name.lower()}_readmodel_tracking"


class PostgresCheckpointRecorder(CheckpointRecorder):
    """Checkpoints in the log's PostgreSQL schema: a tracked position and a state per
    application, on the library's PostgreSQL datastore (its pool and transactions), with our
    tables and statements."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore
        schema = Identifier(datastore.schema)
        tracking = (schema, Identifier(PG_TRACKING_TABLE))
        checkpoints = (schema, Identifier(PG_CHECKPOINT_TABLE))
        self.create_statements = [
            # The shape eventsourcing 9.5's tracking recorder gave this table, so schemas
            # it made read on.
            SQL("CREATE TABLE IF NOT EXISTS {0}.{1} (application_name text, notification_id "
                "bigint, PRIMARY KEY (application_name))").format(*tracking),
            SQL("CREATE TABLE IF NOT EXISTS {0}.{1} (application_name text PRIMARY KEY, "
                "notification_id bigint NOT NULL, state bytea NOT NULL)").format(*checkpoints),
        ]
        self._advance = SQL("UPDATE {0}.{1} SET notification_id = %s WHERE application_name "
                            "= %s AND notification_id < %s").format(*tracking)
        self._first = SQL("INSERT INTO {0}.{1} SELECT %s, %s WHERE NOT EXISTS (SELECT 1 "
                          "FROM {0}.{1} WHERE application_name = %s)").format(*tracking)
        self._tracked = SQL("SELECT MAX(notification_id) AS tracked FROM {0}.{1} WHERE "
                            "application_name = %s").format(*tracking)
        self._upsert = SQL(
            "INSERT INTO {0}.{1} VALUES (%s, %s, %s) ON CONFLICT (application_name) DO "
            "UPDATE SET notification_id = EXCLUDED.notification_id, state = EXCLUDED.state"
        ).format(*checkpoints)
        self._forget = [SQL("DELETE FROM {0}.{1} WHERE application_name = %s").format(*table)
                        for table in (tracking, checkpoints)]
        self._select = SQL(
            "SELECT notification_id, state FROM {0}.{1} WHERE application_name = %s"
        ).format(*checkpoints)

    def create_table(self) -> None:
        with self.datastore.transaction(commit=True) as cursor:
            for statement in self.create_statements:
                cursor.execute(statement)

    def _moved(self, cursor: "Cursor[Any]", tracking: Tracking) -> bool:
        """Move the tracked position forward (row locks keep two savers apart); False when
        it is there or past it already."""
        name, position = tracking.application_name, tracking.notification_id
        cursor.execute(self._advance, (position, name, position))
        if cursor.rowcount > 0:
            return True
        cursor.execute(self._first, (name, position, name))
        return cursor.rowcount > 0

    def _read(self, cursor: "Cursor[Any]", statement: Composed, name: str) -> Any:
        cursor.execute(statement, (name,))
        return cursor.fetchone()

    def insert_tracking(self, tracking: Tracking) -> None:
        with self.datastore.transaction(commit=True) as cursor:
            if not self._moved(cursor, tracking):
                raise IntegrityError(f"{tracking.application_name} is tracked at or past "
                                     f"{tracking.notification_id} already")

    def max_tracking_id(self, application_name: str) -> int | None:
        with self.datastore.transaction(commit=False) as cursor:
            tracked: int | None = self._read(cursor, self._tracked, application_name)["tracked"]
            return tracked

    def save_checkpoint(self, tracking: Tracking, state: bytes | memoryview) -> bool:
        try:
            with self.datastore.transaction(commit=True) as cursor:
                if not self._moved(cursor, tracking):
                    return False
                cursor.execute(self._upsert, (tracking.application_name,
                                              tracking.notification_id, state))
        except IntegrityError:  # another replica tracked it first
            return False
        return True

    def load_checkpoint(self, application_name: str) -> tuple[int, bytes] | None:
        with self.datastore.transaction(commit=False) as cursor:
            row = self._read(cursor, self._select, application_name)
            tracked = self._read(cursor, self._tracked, application_name)["tracked"]
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
    factory = pg_connect.Factory(Environment(EventStore.name, settings))
    recorder = PostgresCheckpointRecorder(factory.datastore)
    if create:
        recorder.create_table()
    return recorder
