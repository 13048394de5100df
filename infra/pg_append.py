"""PostgreSQL persistence: the library's own, with each append one statement run by the server.

The library serializes appends with the log table's EXCLUSIVE lock, held through the commit,
so that notification ids follow commit order and readers tailing the log never pass over an
event that commits late. Its way sends the statements from the client: BEGIN, the lock, the
INSERT, then, once the replica has read the new ids back, COMMIT. The lock is held across
that last round trip, so every append waits on the slowest client's Python: with 8 clients
on one replica, the database's backends sat "idle in transaction" after their INSERT, lock
held, for longer than they waited on their WAL flush.

Here an append is one call of a PL/pgSQL function (`APPEND_FUNCTION`, created with the
tables, see infra.pg_schema) in the pool's autocommit mode: it takes the same lock, notifies
the same channel and inserts, and the server commits when it returns, so the lock is released
without waiting on the client. (The library's own function, `POSTGRES_ENABLE_DB_FUNCTIONS`,
takes no lock.) A unique violation (the stream moved since it was read) is the library's
IntegrityError, as before. Selected by `ledger.storage` (`PERSISTENCE_MODULE`).
"""

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore, PostgresFactory
from eventsourcing.utils import retry
from psycopg.sql import SQL, Identifier

APPEND_FUNCTION = "planledger_append_events"
# The function's argument types, as `to_regprocedure` names them (infra.pg_schema).
APPEND_ARGUMENTS = "text[], bigint[], text[], bytea[], text"

_CREATE = """
CREATE OR REPLACE FUNCTION {schema}.{function}(
    ids text[], versions bigint[], topics text[], states bytea[], lock_wait text)
RETURNS SETOF bigint LANGUAGE plpgsql AS $body$
BEGIN
    PERFORM set_config('lock_timeout', lock_wait, true);
    LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE;
    NOTIFY {channel};
    RETURN QUERY
        INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state)
        SELECT i, v, t, s
        FROM unnest(ids, versions, topics, states) WITH ORDINALITY AS e(i, v, t, s, n)
        ORDER BY n  -- notification ids in the order of the events given
        RETURNING notification_id;
END;
$body$
"""


class AppendingRecorder(PostgresApplicationRecorder):
    """The library's recorder; `insert_events` calls the append function."""

    def __init__(self, datastore: PostgresDatastore, *,
                 events_table_name: str = "stored_events") -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        schema, function = Identifier(datastore.schema), Identifier(APPEND_FUNCTION)
        self.sql_create_statements.append(SQL(_CREATE).format(
            schema=schema, function=function, table=Identifier(self.events_table_name),
            channel=Identifier(self.channel_name)))
        self.append_statement = SQL("SELECT * FROM {}.{}(%s, %s, %s, %s, %s)").format(
            schema, function)
        self.lock_wait = f"{datastore.lock_timeout}s"

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        if not stored_events:
            return []
        columns = ([str(e.originator_id) for e in stored_events],
                   [e.originator_version for e in stored_events],
                   [e.topic for e in stored_events], [e.state for e in stored_events])
        with self.datastore.get_connection() as conn, conn.cursor() as cursor:
            cursor.execute(self.append_statement, (*columns, self.lock_wait), prepare=True)
            return [row[APPEND_FUNCTION] for row in cursor.fetchall()]


class Factory(PostgresFactory):
    """The library's PostgreSQL factory with the appending recorder."""

    application_recorder_class = AppendingRecorder
