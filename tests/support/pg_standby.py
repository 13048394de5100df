"""A PostgreSQL primary and its streaming standby for tests (bench/pg_standby.py makes
them). Without the PostgreSQL server binaries the tests skip, except under CI (`CI` set),
where their absence is a failure, as with tests/support/postgres.py."""

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from planledger.bench.pg_standby import PgBinariesMissing, PgPair, pg_bin, pg_pair

__all__ = ["PgPair", "require_pg_binaries", "standby_pair"]


def require_pg_binaries() -> None:
    try:
        pg_bin()
    except PgBinariesMissing as missing:
        if os.environ.get("CI"):
            pytest.fail(f"{missing} (CI installs PostgreSQL)")
        pytest.skip(str(missing))


@contextmanager
def standby_pair(*, synchronous: bool, wal_delay: float = 0.0) -> Iterator[PgPair]:
    """A fresh primary with planledger's schema and its standby, removed afterwards."""
    require_pg_binaries()
    with pg_pair(synchronous=synchronous, wal_delay=wal_delay) as pair:
        yield pair
