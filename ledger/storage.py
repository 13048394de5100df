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
from urllib.parse import parse_qs, unquote, urlencode, urlparse

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


LIBPQ_PARAMETERS = "PLANLEDGER_POSTGRES_LIBPQ"  # the setting that carries them (url-encoded)


class StorageConfigError(ValueError):
    """A `--db` value that names no usable store (an unknown or malformed option)."""


def postgres_options(url: str) -> dict[str, str]:
    """The URL's planledger options (PG_OPTIONS) over the defaults; refuses malformed ones.
    The query's other parameters are libpq's (postgres_conninfo)."""
    query = _query(url)
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
    """libpq's connection parameters for the URL: the hosts and ports (several, comma
    separated, for libpq to fail over between: `postgresql://u@h1:5432,h2:5432/db`), the
    database, the user and password, the connection timeout (`connect_timeout`, which is
    also planledger's wait for a pooled connection), and every other query parameter but
    planledger's own (PG_OPTIONS), as given: `target_session_attrs`, `sslmode`,
    `application_name`, ... Whether libpq knows them is for infra.pg_connect to ask (no
    driver is imported here)."""
    parsed = urlparse(url)
    userinfo, _, hostlist = parsed.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    hosts, ports = _hosts_and_ports(hostlist)
    query = _query(url)
    conninfo = {
        "host": ",".join(hosts),
        "port": ",".join(ports),
        "dbname": unquote(parsed.path.lstrip("/")) or "postgres",
        "user": unquote(user) or "postgres",
        "password": unquote(password),
        "connect_timeout": postgres_options(url)["connect_timeout"],
    }
    conninfo.update((name, value) for name, value in query.items() if name not in PG_OPTIONS)
    return conninfo


def _query(url: str) -> dict[str, str]:
    return {name: values[-1] for name, values in parse_qs(urlparse(url).query).items()}


def _hosts_and_ports(hostlist: str) -> tuple[list[str], list[str]]:
    """The hosts and ports of `h1:5432,[::1]:5433,h3`, in order (127.0.0.1 and 5432 where
    one is left out)."""
    hosts, ports = [], []
    for entry in hostlist.split(","):
        if entry.startswith("["):  # an IPv6 address: its colons are not the port's
            host, _, rest = entry[1:].partition("]")
            port = rest.removeprefix(":")
        else:
            host, _, port = entry.partition(":")
        if port and not (port.isdigit() and 0 < int(port) < 65536):
            raise StorageConfigError(f"PostgreSQL port {port!r} in --db is not a port number")
        hosts.append(unquote(host) or "127.0.0.1")
        ports.append(port or "5432")
    return hosts, ports


def _postgres_settings(url: str) -> dict[str, str]:
    conn = postgres_conninfo(url)
    settings = {
        "POSTGRES_DBNAME": conn.pop("dbname"),
        "POSTGRES_HOST": conn.pop("host"),
        "POSTGRES_PORT": conn.pop("port"),
        "POSTGRES_USER": conn.pop("user"),
        "POSTGRES_PASSWORD": conn.pop("password"),
        # The rest of libpq's parameters, which the library's settings do not name: given to
        # its pool by infra.pg_connect.
        LIBPQ_PARAMETERS: urlencode(conn),
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
