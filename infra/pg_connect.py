"""libpq's connection parameters for a PostgreSQL store, as every connection of the store
uses them: the event store's pool (and through it the LISTEN follower and the database
clock), the checkpoints' pool, and `db init`'s own connection.

`--db` may name several hosts and any parameter libpq takes (ledger.storage's
postgres_conninfo), which is how a replica follows a promoted standby: with
`target_session_attrs=read-write`, libpq skips a host that is down or read-only and
connects to the one that takes writes now. libpq itself says which parameters it knows (the
version installed may know more than any list of ours), before anything connects.

The library's datastore names only the database, the hosts and ports, the user and the
password; the rest are added to its pool's connection arguments (psycopg_pool's public
`kwargs`) before the pool first connects: the library opens it at its first use.
"""

from typing import Any
from urllib.parse import parse_qsl

import psycopg
from eventsourcing.postgres import PostgresFactory
from psycopg.conninfo import make_conninfo

from planledger.ledger.storage import (
    LIBPQ_PARAMETERS,
    PG_OPTIONS,
    StorageConfigError,
    postgres_conninfo,
)


def libpq_conninfo(url: str) -> str:
    """The connection string for the store at `url`; refuses a parameter libpq does not
    know, naming it."""
    return checked_conninfo(postgres_conninfo(url))


def checked_conninfo(parameters: dict[str, str]) -> str:
    try:
        return make_conninfo(**parameters)
    except psycopg.ProgrammingError as error:  # 'invalid connection option "x"'
        raise StorageConfigError(
            f"--db: {str(error).strip()}: neither libpq's nor planledger's "
            f"({', '.join(PG_OPTIONS)})") from None


class Factory(PostgresFactory):
    """The library's PostgreSQL factory, connecting with every libpq parameter of `--db`."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        extra = dict(parse_qsl(self.env.get(LIBPQ_PARAMETERS) or ""))
        checked_conninfo(extra)
        pool = self.datastore.pool
        assert isinstance(pool.kwargs, dict)  # as the library makes it: the arguments, given
        pool.kwargs = {**pool.kwargs, **extra}

