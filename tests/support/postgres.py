"""PostgreSQL for tests: a fresh schema per test, dropped afterwards.

Every test gets `postgresql://…/test?schema=t_<random>`, so tests run in parallel (xdist)
and again without seeing each other's rows. Without a reachable server the tests skip,
except under CI (`CI` set), where `.ci/run` starts PostgreSQL and its absence is a failure.
"""

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from planledger.infra.pg_schema import drop_schema, init_schema

BASE_URL = os.environ.get("PLANLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_reachable() -> bool:
    try:
        with psycopg.connect(BASE_URL, connect_timeout=3):
            return True
    except psycopg.OperationalError:
        return False


def require_postgres() -> None:
    if postgres_reachable():
        return
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL is not reachable at {BASE_URL} (.ci/run should start it)")
    pytest.skip(f"PostgreSQL is not reachable at {BASE_URL}")


def schema_url(schema: str, **options: object) -> str:
    query = "&".join([f"schema={schema}", *(f"{k}={v}" for k, v in options.items())])
    return f"{BASE_URL}?{query}"


@contextmanager
def fresh_schema(*, init: bool = True, **options: object) -> Iterator[str]:
    """A `--db` URL naming a new, empty schema (initialised unless `init` is False)."""
    require_postgres()
    url = schema_url(f"t_{uuid.uuid4().hex[:16]}", **options)
    if init:
        init_schema(url)
    try:
        yield url
    finally:
        drop_schema(url)
