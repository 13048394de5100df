"""PostgreSQL for tests: a fresh schema per test, dropped afterwards.

Every test gets `postgresql://…/test?schema=t_<random>`, so tests run in parallel (xdist)
and again without seeing each other's rows. Without a reachable server the tests skip,
except under CI (`CI` set), where `.ci/run` starts PostgreSQL and its absence is a failure.
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from planledger.bench.scratch_schemas import (
    BASE_URL,
    postgres_reachable,
    schema_url,
    scratch_schema,
)

__all__ = ["BASE_URL", "fresh_schema", "require_postgres", "schema_url"]


def require_postgres() -> None:
    if postgres_reachable():
        return
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is not reachable at {BASE_URL} (.ci/run should start it)")
    pytest.skip(f"PostgreSQL is not reachable at {BASE_URL}")


@contextmanager
def fresh_schema(*, init: bool = True, **options: object) -> Iterator[str]:
    """A `--db` URL naming a new, empty schema (initialised unless `init` is False)."""
    require_postgres()
    with scratch_schema(init=init, **options) as url:
        yield url
