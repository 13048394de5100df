"""The log's signed head: `planledger audit verify --db` sees the newest events cut off,
a whole stream deleted and a gap in SQLite's positions, which every stream's own chain
alone cannot show; someone without the store's secret cannot sign a head that hides it."""

import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from planledger.api.cli.audit import verify_store
from planledger.api.runtime import Runtime, open_runtime
from planledger.infra.pg_schema import EVENTS_TABLE
from planledger.infra.secret import SECRET_ENV
from planledger.ledger.chain import GENESIS, link, seal, unseal
from planledger.ledger.log_head import KeepsHead, SignedHead
from planledger.ledger.storage import postgres_options
from planledger.main import run as app
from planledger.replays.fixture import seed_auth_refresh
from tests.support.cli_runner import CliRunner
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.postgres import BASE_URL, fresh_schema

runner = CliRunner()
SECRET = "a-test-secret-of-more-than-thirty-two-bytes"


def _some_work(runtime: Runtime) -> None:
    seed_auth_refresh(runtime.ledger, race=True)
    agent = runtime.ledger.start_session("agent")
    runtime.ledger.list_ready("auth-refresh", agent.id)


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> str:
    db = str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db, clock=clock, ids=SequentialIds())
    _some_work(runtime)
    runtime.close()
    return db


def _verify(db: str) -> tuple[int, str]:
    result = runner.invoke(app, ["audit", "verify", "--db", db])
    return result.exit_code, result.output


def _sql(db: str, *statements: str) -> None:
    with sqlite3.connect(db) as conn:
        for statement in statements:
            conn.execute(statement)


def _tip_of(db: str) -> tuple[int, str]:
    """The log's tip as a forger recomputes it (no secret needed for that)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT rowid, originator_id, originator_version, topic, state "
                            "FROM stored_events ORDER BY rowid").fetchall()
    tip = GENESIS
    for row in rows:
        tip = link(tip, *row)
    return rows[-1][0], tip


def test_an_untouched_store_verifies_against_its_signed_head(store: str) -> None:
    code, out = _verify(store)
    assert code == 0 and "signed head at position" in out and "matches the log" in out


def test_the_newest_events_cut_off_are_detected(store: str) -> None:
    _sql(store, "DELETE FROM stored_events WHERE rowid > (SELECT MAX(rowid) - 3 "
                "FROM stored_events)")

    code, out = _verify(store)

    assert code == 1 and "the newest events were deleted" in out, out


def test_a_cut_stays_visible_after_later_appends_take_its_positions(
    store: str, clock: FakeClock,
) -> None:
    _sql(store, "DELETE FROM stored_events WHERE rowid > (SELECT MAX(rowid) - 2 "
                "FROM stored_events)")
    runtime = open_runtime(store, clock=clock)
    runtime.ledger.start_session("after the cut")
    runtime.ledger.start_session("and another")
    runtime.close()

    code, out = _verify(store)

    assert code == 1 and "is not the log that was signed" in out, out


def test_a_gap_in_sqlite_positions_names_the_missing_position(store: str) -> None:
    _sql(store, "DELETE FROM stored_events WHERE rowid = 5")

    code, out = _verify(store)

    assert code == 1 and "position 5 is missing: the log jumps from 4 to 6" in out, out


def test_a_head_rewritten_without_the_secret_is_refused(store: str) -> None:
    _sql(store, "DELETE FROM stored_events WHERE rowid > (SELECT MAX(rowid) - 3 "
                "FROM stored_events)")
    position, tip = _tip_of(store)
    _sql(store, f"UPDATE planledger_head SET position = {position}, tip = '{tip}'")

    code, out = _verify(store)

    assert code == 1 and "not signed with the store's secret" in out, out


def test_a_head_deleted_with_the_tail_is_reported_missing(store: str) -> None:
    _sql(store, "DELETE FROM stored_events WHERE rowid > (SELECT MAX(rowid) - 3 "
                "FROM stored_events)", "DELETE FROM planledger_head")

    code, out = _verify(store)

    assert code == 1 and "the store has no signed head" in out, out


def test_an_event_inserted_around_the_store_is_detected(store: str) -> None:
    """Sealed correctly into a stream of its own: only the head shows it was not appended
    by the store."""
    with sqlite3.connect(store) as conn:
        topic, state = conn.execute("SELECT topic, state FROM stored_events WHERE rowid = 1"
                                    ).fetchone()
        found = unseal(state)
        assert found is not None
        forged, _ = seal(GENESIS, "x", 1, topic, found.body)
        conn.execute("INSERT INTO stored_events VALUES ('x', 1, ?, ?)", (topic, forged))

    code, out = _verify(store)

    assert code == 1 and "appended without moving the signed head" in out, out


def test_two_processes_appending_in_turn_keep_one_head(store: str, clock: FakeClock) -> None:
    first, second = open_runtime(store, clock=clock), open_runtime(store, clock=clock)
    for runtime in (first, second, first, second):
        runtime.ledger.start_session("taking turns")
    first.close()
    second.close()

    code, out = _verify(store)

    assert code == 0 and "matches the log" in out, out


def test_an_imported_recording_starts_with_a_signed_head(tmp_path: Path) -> None:
    db = str(tmp_path / "imported.sqlite")
    assert runner.invoke(app, ["replay", "import", "replays/two-agents-race.jsonl",
                               "--db", db]).exit_code == 0

    code, out = _verify(db)

    assert code == 0 and "matches the log" in out, out


# --- PostgreSQL: positions may have gaps there, so the head alone shows a deletion ---


@pytest.fixture
def pg(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> Iterator[str]:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    with fresh_schema() as url:
        runtime = open_runtime(url, clock=clock, ids=SequentialIds())
        _some_work(runtime)
        runtime.close()
        yield url


def _pg_delete(url: str, where: str) -> None:
    table = sql.Identifier(postgres_options(url)["schema"], EVENTS_TABLE)
    with psycopg.connect(BASE_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DELETE FROM {} WHERE ").format(table) + sql.SQL(where))


def test_postgres_the_newest_events_cut_off_are_detected(pg: str) -> None:
    _pg_delete(pg, "notification_id > 20")

    code, out = _verify(pg)

    assert code == 1 and "the newest events were deleted" in out, out


def test_postgres_a_whole_stream_deleted_is_detected(pg: str) -> None:
    _pg_delete(pg, "originator_id = (SELECT originator_id FROM {} WHERE topic LIKE "
                   "'%StepOpened' ORDER BY notification_id DESC LIMIT 1)".replace(
                       "{}", f'"{postgres_options(pg)["schema"]}".{EVENTS_TABLE}'))

    code, out = _verify(pg)

    assert code == 1 and "is not the log that was signed" in out, out


def _pg_execute(url: str, statement: str) -> None:
    schema = sql.Identifier(postgres_options(url)["schema"])
    with psycopg.connect(BASE_URL, autocommit=True) as conn:
        conn.execute(sql.SQL(statement).format(schema=schema))


def test_postgres_a_head_deleted_is_tampered_but_a_store_from_before_heads_is_not(
    pg: str,
) -> None:
    _pg_execute(pg, "DELETE FROM {schema}.planledger_head")
    code, out = _verify(pg)
    assert code == 1 and "though it kept one: it was deleted" in out, out

    _pg_execute(pg, "DELETE FROM {schema}.planledger_head_began")  # as 0.1 left it
    code, out = _verify(pg)
    assert code == 0 and "a version that kept none" in out, out


def test_postgres_concurrent_appends_leave_the_head_signed_at_the_end(
    pg: str, clock: FakeClock,
) -> None:
    runtime = open_runtime(pg, clock=clock)
    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda n: runtime.ledger.start_session(f"agent {n}"), range(64)))
        result, finding = verify_store(runtime)
        recorder = runtime.store.recorder
        assert isinstance(recorder, KeepsHead)
        head = recorder.read_head()
    finally:
        runtime.close()

    assert finding is not None and finding.intact, finding
    assert isinstance(head, SignedHead) and head.position == getattr(result, "last", None)
