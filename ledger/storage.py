"""Where the log lives: one place that turns a `--db` value into the event store's settings.

- a path (default `./.planledger/ledger.sqlite`): an SQLite file, created on first use,
  shared safely by several processes (WAL journal, busy timeout);
- `memory`: an in-process store for fast tests;
- `postgresql://user@host:port/dbname`: PostgreSQL.
"""

import os
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

DEFAULT_DB = "./.planledger/ledger.sqlite"
DB_ENV_VAR = "PLANLEDGER_DB"
MEMORY = "memory"

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
        return {**_COMMON, "PERSISTENCE_MODULE": "eventsourcing.popo"}
    if is_postgres(db):
        return {**_COMMON, **_postgres_settings(db)}
    path = Path(db).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    return {
        **_COMMON,
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": str(path),
        "SQLITE_LOCK_TIMEOUT": "30",
    }


def _postgres_settings(url: str) -> dict[str, str]:
    parsed = urlparse(url)
    query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    settings = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "POSTGRES_HOST": parsed.hostname or "127.0.0.1",
        "POSTGRES_PORT": str(parsed.port or 5432),
        "POSTGRES_USER": unquote(parsed.username or "postgres"),
        "POSTGRES_PASSWORD": unquote(parsed.password or ""),
    }
    if "schema" in query:
        settings["POSTGRES_SCHEMA"] = query["schema"]
    return settings
