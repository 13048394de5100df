"""Creating the PostgreSQL schema once, safely, however many replicas start together.

The library's table creation (CREATE TYPE, CREATE TABLE IF NOT EXISTS, CREATE FUNCTION) races
when several processes run it at once: PostgreSQL's catalogs answer the loser with a unique
violation. So replicas run with the library's CREATE_TABLE off, and the tables are made here,
by one process at a time: `init_schema` holds a PostgreSQL advisory lock keyed by the schema
while it creates the schema and lets the library create its tables in it. `ensure_schema` is
the cheap check `serve` makes first; it takes the lock only when something is missing.
"""

from dataclasses import dataclass

import psycopg
from eventsourcing.postgres import PostgresRecorder
from psycopg import sql

from planledger.infra.pg_append import (
    ANSWERS_TABLE,
    APPEND_ARGUMENTS,
    APPEND_FUNCTION,
    BEGAN_TABLE,
    HEAD_TABLE,
    SIGN_ARGUMENTS,
    SIGN_FUNCTION,
    Factory,
)
from planledger.infra.pg_checkpoints import (
    PG_CHECKPOINT_TABLE,
    PG_TRACKING_TABLE,
    postgres_checkpoints,
)
from planledger.infra.pg_connect import libpq_conninfo
from planledger.infra.store_format import FORMAT, FORMAT_TABLE, refuse_newer
from planledger.ledger.storage import StorageConfigError, postgres_options, store_settings
from planledger.ledger.store import EventStore
from planledger.version import __version__

# The library names its table after the application and its row type after the id type.
EVENTS_TABLE = f"{EventStore.name.lower()}_events"
SNAPSHOTS_TABLE = f"{EventStore.name.lower()}_snapshots"
EVENT_TYPE = "stored_event_text"
NOTIFICATION_INDEX = f"{EVENTS_TABLE}_notification_id_idx"

_LOCK_NAMESPACE = "planledger:schema:"

_MISSING_QUERY = """
SELECT name FROM (VALUES
    ('table', to_regclass(%(table)s)::text),
    ('snapshots', to_regclass(%(snapshots)s)::text),
    ('type', to_regtype(%(type)s)::text),
    ('index', to_regclass(%(index)s)::text),
    ('checkpoints', to_regclass(%(checkpoints)s)::text),
    ('checkpoint tracking', to_regclass(%(checkpoint tracking)s)::text),
    ('append function', to_regprocedure(%(append function)s)::text),
    ('signed head', to_regclass(%(signed head)s)::text),
    ('head signing function', to_regprocedure(%(head signing function)s)::text),
    ('signed head marker', to_regclass(%(signed head marker)s)::text),
    ('idempotent answers', to_regclass(%(idempotent answers)s)::text),
    ('store format', to_regclass(%(store format)s)::text)
) AS objects(name, found)
WHERE found IS NULL
"""


class SchemaError(StorageConfigError):
    """The schema's objects could not be created (a table of that name made by someone
    else, say): nothing was changed."""


@dataclass(frozen=True)
class SchemaReport:
    """What `init_schema` found and did: `created` is empty when all was there already."""

    schema: str
    created: tuple[str, ...]


def _connect(db: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(libpq_conninfo(db), autocommit=True)


def _missing(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> tuple[str, ...]:
    names = {
        "table": f'"{schema}".{EVENTS_TABLE}',
        "snapshots": f'"{schema}".{SNAPSHOTS_TABLE}',
        "type": f'"{schema}".{EVENT_TYPE}',
        "index": f'"{schema}".{NOTIFICATION_INDEX}',
        "checkpoints": f'"{schema}".{PG_CHECKPOINT_TABLE}',
        "checkpoint tracking": f'"{schema}".{PG_TRACKING_TABLE}',
        "append function": f'"{schema}".{APPEND_FUNCTION}({APPEND_ARGUMENTS})',
        "signed head": f'"{schema}".{HEAD_TABLE}',
        "head signing function": f'"{schema}".{SIGN_FUNCTION}({SIGN_ARGUMENTS})',
        "signed head marker": f'"{schema}".{BEGAN_TABLE}',
        "idempotent answers": f'"{schema}".{ANSWERS_TABLE}',
        "store format": f'"{schema}".{FORMAT_TABLE}',
    }
    has_schema = conn.execute(
        "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    if has_schema is None:
        return ("schema", *names)
    rows = conn.execute(_MISSING_QUERY, names).fetchall()
    missing = tuple(str(row[0]) for row in rows)
    if "store format" not in missing:
        _refuse_newer(conn, schema)
    return missing


def _refuse_newer(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> None:
    """NewerStore if a newer planledger wrote the schema (infra.store_format)."""
    row = conn.execute(sql.SQL("SELECT format, written_by FROM {}.{} WHERE id = 1").format(
        sql.Identifier(schema), sql.Identifier(FORMAT_TABLE))).fetchone()
    refuse_newer(f"PostgreSQL schema {schema}", row)


def _stamp(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> None:
    """The schema's format row, made or raised to this planledger's (never lowered)."""
    table = sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(FORMAT_TABLE))
    conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} (id integer PRIMARY KEY CHECK (id = 1), "
                         "format integer NOT NULL, written_by text NOT NULL)").format(table))
    conn.execute(sql.SQL("INSERT INTO {} AS t (id, format, written_by) VALUES (1, %s, %s) "
                         "ON CONFLICT (id) DO UPDATE SET format = excluded.format, "
                         "written_by = excluded.written_by WHERE t.format < excluded.format"
                         ).format(table), (FORMAT, __version__))


def missing_objects(db: str) -> tuple[str, ...]:
    """The parts of the store not yet created in the URL's schema (empty when ready);
    NewerStore if a newer planledger wrote it."""
    with _connect(db) as conn:
        return _missing(conn, postgres_options(db)["schema"])


def init_schema(db: str) -> SchemaReport:
    """Create what is missing of the schema, its tables and functions, in one transaction:
    all of it or, on any failure, nothing (SchemaError). Every statement is idempotent, so
    an older version's schema gets what it lacks; safe to run from many processes."""
    schema = postgres_options(db)["schema"]
    with _connect(db) as conn:
        # A session-level lock: one process at a time creates, the others then find it all.
        conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))",
                     (_LOCK_NAMESPACE + schema,))
        missing = _missing(conn, schema)
        if missing:
            statements = _create_statements(db)
            try:
                with conn.transaction():
                    _create(conn, schema, statements)
            except psycopg.OperationalError:
                raise  # the server went away: said as such by the caller
            except psycopg.Error as error:
                raise SchemaError(f"PostgreSQL schema {schema}: cannot create {', '.join(missing)}"
                                  f" (nothing was changed): {error}".strip()) from error
        return SchemaReport(schema, missing)


def _create_statements(db: str) -> list[sql.Composable]:
    """The library's statements for the log's and the snapshots' tables (with ours, infra.
    pg_append, added to them), then the checkpoints' (infra.pg_checkpoints)."""
    store = EventStore(store_settings(db), Factory)  # CREATE_TABLE is off: it creates nothing
    checkpoints = postgres_checkpoints(db)
    try:
        recorders = [store.recorder] + ([store.snapshots.recorder] if store.snapshots else [])
        statements: list[sql.Composable] = []
        for recorder in recorders:
            assert isinstance(recorder, PostgresRecorder)
            statements += recorder.sql_create_statements
        return statements + list(checkpoints.create_statements)
    finally:
        checkpoints.close()
        store.close()


def _create(conn: psycopg.Connection[tuple[object, ...]], schema: str,
            statements: list[sql.Composable]) -> None:
    conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    for statement in statements:
        text = statement.as_string(conn)
        if "CREATE TYPE" in text:  # it has no IF NOT EXISTS: a type made before is kept
            text = (f"DO $create$ BEGIN {text}; EXCEPTION WHEN duplicate_object THEN NULL; "
                    "END $create$")
        conn.execute(text)
    _stamp(conn, schema)


def ensure_schema(db: str) -> SchemaReport:
    """Init the schema only when part of it is missing; when all is there, that costs one
    short connection and two catalog lookups, and no lock."""
    schema = postgres_options(db)["schema"]
    if not missing_objects(db):
        return SchemaReport(schema, ())
    return init_schema(db)


def drop_schema(db: str) -> None:
    """Drop the URL's schema and everything in it (tests and benchmarks clean up with it)."""
    schema = postgres_options(db)["schema"]
    if schema == "public":
        raise ValueError("refusing to drop the public schema")
    with _connect(db) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
            sql.Identifier(schema)))
