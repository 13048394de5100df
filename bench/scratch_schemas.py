"""PostgreSQL scratch space: a fresh schema of the local test database, dropped afterwards.

Every user gets `postgresql://…/test?schema=t_<random>`, so runs go in parallel and again
without seeing each other's rows. The benchmarks use it, and so do the tests
(tests/support/postgres.py adds skipping where no server is reachable).
"""

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from planledger.infra.pg_schema import drop_schema, init_schema

BASE_URL = os.environ.get("PLANLEDGER_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_reachable() -> bool:
    try:
        with psycopg.connect(BASE_URL, connect_timeout=3):
            return True
    except psycopg.OperationalError:
        return False


def schema_url(schema: str, **options: object) -> str:
    query = "&".join([f"schema={schema}", *(f"{k}={v}" for k, v in options.items())])
    return f"{BASE_URL}?{query}"


@contextmanager
def scratch_schema(*, init: bool = True, **options: object) -> Iterator[str]:
    """A `--db` URL naming a new, empty schema (initialised unless `init` is False)."""
    url = schema_url(f"t_{uuid.uuid4().hex[:16]}", **options)
    if init:
        init_schema(url)
    try:
        yield url
    finally:
        drop_schema(url)
