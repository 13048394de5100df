"""A signed head deleted (or its signature cleared) is evidence: the next append must not
start a fresh head over the cut log. Only a store from before heads gets one started."""

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from planledger.api.cli.audit import verify_store
from planledger.api.runtime import open_runtime
from planledger.infra.pg_append import BEGAN_TABLE, HEAD_TABLE
from planledger.infra.pg_schema import EVENTS_TABLE
from planledger.infra.secret import SECRET_ENV
from planledger.ledger.log_head import Finding
from planledger.ledger.storage import postgres_options
from planledger.replays.fixture import seed_auth_refresh
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.postgres import BASE_URL, fresh_schema

SECRET = "a-test-secret-of-more-than-thirty-two-bytes"


def _append_then_verify(db: str, clock: FakeClock) -> Finding:
    runtime = open_runtime(db, clock=clock)
    try:
        runtime.ledger.start_session("a stranger's session start")
        _, head = verify_store(runtime)
    finally:
        runtime.close()
    assert head is not None
    return head


# --- SQLite -------------------------------------------------------------------------------


@pytest.fixture
def sqlite_store(tmp_path: Path, clock: FakeClock) -> str:
    db = str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db, clock=clock, ids=SequentialIds())
    seed_auth_refresh(runtime.ledger, race=True)
    runtime.close()
    return db


def test_a_store_from_before_heads_gets_a_head_at_its_next_append_with_a_warning(
    sqlite_store: str, clock: FakeClock, caplog: pytest.LogCaptureFixture,
) -> None:
    with sqlite3.connect(sqlite_store) as conn:
        conn.execute(f"DROP TABLE {HEAD_TABLE}")  # what a store written before heads has

    with caplog.at_level(logging.WARNING, logger="planledger.head"):
        head = _append_then_verify(sqlite_store, clock)

    assert head.intact, head
    assert "kept no signed head: starting one over its" in caplog.text


def test_a_head_row_deleted_is_not_started_again_by_later_appends(
    sqlite_store: str, clock: FakeClock,
) -> None:
    with sqlite3.connect(sqlite_store) as conn:
        conn.execute(f"DELETE FROM {HEAD_TABLE}")

    _append_then_verify(sqlite_store, clock)
    head = _append_then_verify(sqlite_store, clock)

    assert not head.intact and "no signed head" in head.message, head


# --- PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture
def pg(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> Iterator[str]:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    with fresh_schema() as url:
        runtime = open_runtime(url, clock=clock, ids=SequentialIds())
        seed_auth_refresh(runtime.ledger, race=True)
        runtime.close()
        yield url


def _pg(url: str, statement: str) -> None:
    schema = postgres_options(url)["schema"]
    with psycopg.connect(BASE_URL, autocommit=True) as conn:
        conn.execute(sql.SQL(statement).format(
            events=sql.Identifier(schema, EVENTS_TABLE), head=sql.Identifier(schema, HEAD_TABLE),
            began=sql.Identifier(schema, BEGAN_TABLE)))


def _pg_cut_tail(url: str) -> None:
    _pg(url, "DELETE FROM {events} WHERE notification_id > "
             "(SELECT MAX(notification_id) - 3 FROM {events})")


def test_postgres_a_tail_cut_with_its_head_deleted_stays_visible_after_appends(
    pg: str, clock: FakeClock,
) -> None:
    _pg_cut_tail(pg)
    _pg(pg, "DELETE FROM {head}")

    head = _append_then_verify(pg, clock)

    assert not head.intact, head


def test_postgres_a_tail_cut_with_its_signature_cleared_stays_visible_after_appends(
    pg: str, clock: FakeClock,
) -> None:
    _pg_cut_tail(pg)
    _pg(pg, "UPDATE {head} SET position = 0, tip = '', signed_position = 0, "
            "signed_tip = '', mac = NULL")

    head = _append_then_verify(pg, clock)

    assert not head.intact, head


def test_postgres_a_schema_from_before_heads_gets_a_head_at_its_next_append(
    pg: str, clock: FakeClock,
) -> None:
    _pg(pg, "DELETE FROM {head}")
    _pg(pg, "DELETE FROM {began}")  # what a schema written before heads has

    head = _append_then_verify(pg, clock)

    assert head.intact, head
