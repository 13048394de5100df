"""Where the log lives: one place that turns a `--db` value into the event store's settings
(which adapter serves it is infra.persistence's choice).

- a path (default `./.planledger/ledger.sqlite`): an SQLite file, created on first use,
  shared safely by several processes (WAL journal, busy timeout);
- `memory`: an in-process store for fast tests;
- `postgresql://user@host:port/dbname`: PostgreSQL, shared by several API replicas; options
  in the query (`?schema=team_a&pool_size=10`, see PG_OPTIONS). Its tables are created once,
  explicitly, by `planledger db init` (see infra.pg_schema), never by each replica.
"""

import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

DEFAULT_DB = "./.planledger/ledger.sqlite"
DB_ENV_VAR = "PLANLEDGER_DB"
MEMORY = "memory"
SQLITE_LOCK_TIMEOUT_VAR = "PLANLEDGER_SQLITE_LOCK_TIMEOUT"

_COMMON = {
    "ORIGINATOR_ID_TYPE": "text",
    "AGGREGATE_CACHE_MAXSIZE": "20000",
    "DEEPCOPY_FROM_AGGREGATE_CACHE": "n",
}


def resolve_db(db: str | None) -> str:
    """The store to use: the given value, else $PLANLEDGER_DB, else the default file."""
    return db or os.environ.get(DB_ENV_VAR) or DEFAULT_DB


def is_postgres(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def store_settings(db: str) -> dict[str, str]:
    """The eventsourcing environment for the store named by `db`."""
    if db == MEMORY:
        return dict(_COMMON)
    if is_postgres(db):
        return {**_COMMON, **_postgres_settings(db)}
    refuse_memory_sqlite(db)
    path = Path(db).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    return {
        **_COMMON,
        "SQLITE_DBNAME": str(path),
        "SQLITE_LOCK_TIMEOUT": sqlite_lock_timeout(),
    }


def names_memory_sqlite(name: str) -> bool:
    """Whether `name` is an in-memory SQLite database: not a store, since every
    connection to one opens an empty database of its own (reads would never see what
    was written)."""
    return not is_postgres(name) and (":memory:" in name or "mode=memory" in name)


def refuse_memory_sqlite(db: str) -> None:
    """Refuse `--db` naming an in-memory SQLite database (see names_memory_sqlite), before
    anything of a store is made for it."""
    if names_memory_sqlite(db):
        raise StorageConfigError(f"--db {db}: an in-memory SQLite database is not a store; "
                                 f"the in-memory store is --db {MEMORY}")


def sqlite_lock_timeout() -> str:
    """Seconds a write waits for another process's lock before failing (503), as set."""
    return os.environ.get(SQLITE_LOCK_TIMEOUT_VAR) or "30"


CHECKPOINT_TABLE = "readmodel_checkpoints"  # in the file below, beside the tracked positions
TRACKING_TABLE = "tracking"  # the read models' tracked positions, one row per application


def checkpoint_path(db: str) -> Path:
    """Where the read model's checkpoints of the SQLite log at `db` live (a file beside it,
    infra.sqlite_checkpoints): `ledger.sqlite` keeps them in `ledger.views.sqlite`."""
    path = Path(db).expanduser()
    return path.with_name(f"{path.stem}.views{path.suffix or '.sqlite'}")


# PostgreSQL options read from the URL's query (`?schema=team_a&pool_size=10`), with the
# defaults a replica starts with. Each maps to one setting of the library's persistence.
PG_OPTIONS: dict[str, tuple[str, str]] = {
    "schema": ("POSTGRES_SCHEMA", "public"),
    # Connections kept open per process, and how many more it may open under a burst:
    # uvicorn's worker threads share them, so a burst waits for a connection rather than
    # exhausting the server's max_connections across replicas.
    "pool_size": ("POSTGRES_POOL_SIZE", "5"),
    "max_overflow": ("POSTGRES_MAX_OVERFLOW", "10"),
    # Seconds to wait for a pooled connection (or a new one) before failing the request.
    "connect_timeout": ("POSTGRES_CONNECT_TIMEOUT", "10"),
    # Seconds an append waits for the log's table lock (appends are serialized so that
    # readers tailing the log never pass over a gap); 0 would wait forever behind a stuck
    # writer.
    "lock_timeout": ("POSTGRES_LOCK_TIMEOUT", "10"),
    # Seconds a connection may sit idle inside a transaction before the server ends it,
    # so a killed or hung replica cannot hold the table lock.
    "idle_in_transaction_timeout": ("POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT", "5"),
    # Seconds before a pooled connection is replaced, and whether to check it on checkout.
    "conn_max_age": ("POSTGRES_CONN_MAX_AGE", "3600"),
    "pre_ping": ("POSTGRES_PRE_PING", "no"),
}
_PG_NUMERIC = {"pool_size", "max_overflow", "connect_timeout", "lock_timeout",
               "idle_in_transaction_timeout", "conn_max_age"}


class StorageConfigError(ValueError):
    """A `--db` value that names no usable store (an unknown or malformed option)."""


def postgres_options(url: str) -> dict[str, str]:
    """The URL's PostgreSQL options over the defaults; refuses unknown or malformed ones."""
    query = {k: v[-1] for k, v in parse_qs(urlparse(url).query).items()}
    unknown = sorted(set(query) - set(PG_OPTIONS))
    if unknown:
        raise StorageConfigError(
            f"unknown PostgreSQL option(s) {', '.join(unknown)} in --db; "
            f"known: {', '.join(PG_OPTIONS)}")
    options = {name: query.get(name, default) for name, (_, default) in PG_OPTIONS.items()}
    for name in _PG_NUMERIC:
        if not options[name].isdigit():
            raise StorageConfigError(
                f"PostgreSQL option {name}={options[name]!r} is not a whole number")
    if not options["schema"].isidentifier():
        raise StorageConfigError(
            f"PostgreSQL schema {options['schema']!r} must be a plain identifier")
    return options


def postgres_conninfo(url: str) -> dict[str, str]:
    """The server, database and user the URL names (no pool or schema options)."""
    parsed = urlparse(url)
    return {
        "dbname": unquote(parsed.path.lstrip("/")) or "postgres",
        "host": parsed.hostname or "127.0.0.1",
        "port": str(parsed.port or 5432),
        "user": unquote(parsed.username or "postgres"),
        "password": unquote(parsed.password or ""),
    }


def _postgres_settings(url: str) -> dict[str, str]:
    conn = postgres_conninfo(url)
    settings = {
        "POSTGRES_DBNAME": conn["dbname"],
        "POSTGRES_HOST": conn["host"],
        "POSTGRES_PORT": conn["port"],
        "POSTGRES_USER": conn["user"],
        "POSTGRES_PASSWORD": conn["password"],
        # The library's CREATE TABLE is not safe from several processes at once: replicas
        # never create tables; `planledger db init` (infra.pg_schema) does, under a lock.
        "CREATE_TABLE": "no",
        "PLANLEDGER_CREATE_TABLE": "no",  # the library reads this spelling first
        # Kept off on purpose: its insert function skips the table lock, so a reader
        # tailing the log could pass over an event that commits late (ours takes it).
        "POSTGRES_ENABLE_DB_FUNCTIONS": "no",
    }
    for name, value in postgres_options(url).items():
        settings[PG_OPTIONS[name][0]] = value
    return settings
