"""Every released version's store opens in this one: the stores under tests/fixtures/stores
(written once by 0.1.0 and 0.2.0 themselves, see its README) are read, take new writes,
rebuild to the state kept incrementally (from the old version's own checkpoint), replay
the same, and pass `audit verify`, as the current version finds them. Each release adds
its store there."""

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from planledger.api.runtime import Runtime, open_runtime
from planledger.infra.store_format import FORMAT, FORMAT_TABLE, NewerStore
from planledger.ledger.domain.ids import PlanSlug
from planledger.ledger.storage import postgres_options
from planledger.projections.readmodel import ReadModel
from planledger.version import __version__
from tests.support.fakes import FakeClock
from tests.support.postgres import BASE_URL, fresh_schema

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"
PLANLEDGER = str(Path(sys.executable).parent / "planledger")
PLAN = PlanSlug("upgrade-check")
PG_SECRET = "fixture-secret-of-more-than-thirty-two-bytes-0.2.0"
LATER = datetime(2027, 1, 1, tzinfo=UTC)  # long after every lease in the fixtures lapsed


def _sqlite_copy(version: str, where: Path) -> str:
    for kept in (FIXTURES / version).glob("ledger.*"):
        shutil.copy(kept, where / kept.name)
    (where / "ledger.sqlite.secret").chmod(0o600)  # git keeps no file modes
    return str(where / "ledger.sqlite")


@pytest.fixture(params=["0.1.0", "0.2.0", "0.2.0 on PostgreSQL"])
def store(request: pytest.FixtureRequest, tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A copy of a released version's store (never the committed file itself)."""
    version, _, where = str(request.param).partition(" on ")
    if not where:
        monkeypatch.delenv("PLANLEDGER_SECRET", raising=False)
        yield _sqlite_copy(version, tmp_path)
        return
    monkeypatch.setenv("PLANLEDGER_SECRET", PG_SECRET)
    with fresh_schema(init=False) as url:
        schema = postgres_options(url)["schema"]
        dump = (FIXTURES / version / "postgres.sql").read_text()
        renamed = re.sub(r"\bfixture_020\b", schema, dump)
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", "-d", BASE_URL, "-c",
                        f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'], check=True,
                       capture_output=True)
        subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", "-d", BASE_URL],
                       input=renamed, text=True, check=True, capture_output=True)
        yield url


def _planledger(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PLANLEDGER, *args], capture_output=True, text=True, timeout=120,
                          check=False, env={**os.environ})


@pytest.fixture
def runtime(store: str) -> Iterator[Runtime]:
    rt = open_runtime(store, clock=FakeClock(LATER), checkpoints=True)
    yield rt
    rt.close()


def test_an_old_store_verifies_before_and_after_new_writes(store: str) -> None:
    before = _planledger("audit", "verify", "--db", store)
    assert before.returncode == 0 and "TAMPERED" not in before.stderr, before
    rt = open_runtime(store)
    rt.ledger.start_session("after the upgrade")
    rt.close()
    after = _planledger("audit", "verify", "--db", store)
    assert after.returncode == 0 and "matches the log" in after.stdout, after


def test_an_old_store_reads_as_it_was_left(runtime: Runtime) -> None:
    progress = runtime.reads.progress(PLAN)
    assert (progress.done, progress.total) == (1, 3)
    (ready,) = runtime.reads.ready_steps(PLAN)  # held when written, lapsed since
    assert ready.title == "Backfill the new table" and ready.lapsed_holder_name == "holder"
    names = {s.name for s in runtime.reads.sessions.values()}
    assert {"planner", "worker", "holder"} <= names
    histories = [[e.kind for e in runtime.reads.history(s)]
                 for s in runtime.store.plan(PLAN).steps]
    (done,) = [kinds for kinds in histories if kinds[-1] == "StepCompleted"]
    assert done[-3:] == ["StepClaimed", "LeaseRenewed", "StepCompleted"], done


def test_an_old_store_takes_new_work_and_rebuilds_to_the_same_state(runtime: Runtime,
                                                                     ) -> None:
    agent = runtime.ledger.start_session("new agent").id
    for _ in range(2):  # backfill, then switch, which waited on it
        (step,) = runtime.reads.ready_ids(PLAN)
        claim = runtime.ledger.claim(step, agent)
        runtime.ledger.complete(step, agent, fence=claim.fence)
    runtime.reads.catch_up()
    assert runtime.reads.progress(PLAN).done == 3

    rebuilt = ReadModel(runtime.store, FakeClock(LATER), pull_on_read=False)
    rebuilt.catch_up()
    assert rebuilt.facts() == runtime.reads.facts()  # the model that started from 0.x's


def test_an_old_store_exports_a_recording_that_replays_identically(
    store: str, tmp_path: Path,
) -> None:
    recording = tmp_path / "old.jsonl"
    exported = _planledger("replay", "export", str(recording), "--db", store)
    assert exported.returncode == 0, exported
    replayed = _planledger("replay", "run", str(recording))
    assert replayed.returncode == 0 and replayed.stdout.startswith("identical"), replayed


def _written(store: str) -> tuple[int, str] | None:
    """The store's format row (infra.store_format), read as it is kept."""
    if store.startswith("postgresql://"):
        schema = postgres_options(store)["schema"]
        with psycopg.connect(BASE_URL) as conn:
            exists = conn.execute("SELECT to_regclass(%s)", (f'"{schema}".{FORMAT_TABLE}',))
            if exists.fetchone() == (None,):
                return None
            row = conn.execute(sql.SQL("SELECT format, written_by FROM {}.{}").format(
                sql.Identifier(schema), sql.Identifier(FORMAT_TABLE))).fetchone()
    else:
        with closing(sqlite3.connect(store)) as conn:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                                (FORMAT_TABLE,)).fetchone():
                return None
            row = conn.execute(f"SELECT format, written_by FROM {FORMAT_TABLE}").fetchone()
    return (int(row[0]), str(row[1])) if row is not None else None


def _stamp_as_newer(store: str) -> None:
    statement = f"UPDATE {{}} SET format = {FORMAT + 1}, written_by = '9.9.9'"
    if store.startswith("postgresql://"):
        table = sql.SQL("{}.{}").format(sql.Identifier(postgres_options(store)["schema"]),
                                        sql.Identifier(FORMAT_TABLE))
        with psycopg.connect(BASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL(statement).format(table))
    else:
        with closing(sqlite3.connect(store)) as conn, conn:
            conn.execute(statement.format(FORMAT_TABLE))


def test_an_old_store_is_stamped_with_this_version_once_it_is_opened(store: str) -> None:
    assert _written(store) is None  # released before stores said who wrote them
    if store.startswith("postgresql://"):
        made = _planledger("db", "init", "--db", store)
        assert made.returncode == 0 and "store format" in made.stdout, made
    open_runtime(store).close()
    assert _written(store) == (FORMAT, __version__)
    open_runtime(store).close()  # opened again: the same row, nothing added
    assert _written(store) == (FORMAT, __version__)


def test_a_store_a_newer_planledger_wrote_is_refused_naming_both_versions(store: str) -> None:
    open_runtime(store).close()
    _stamp_as_newer(store)
    before = Path(store).read_bytes() if not store.startswith("postgresql://") else b""
    refusal = (f"was written by planledger 9.9.9 (store format {FORMAT + 1}); this is "
               f"planledger {__version__}, which reads store formats up to {FORMAT}")
    for args in (["plan", "list"], ["db", "status"], ["audit", "verify"], ["ready", PLAN]):
        refused = _planledger(*args, "--db", store)
        assert refused.returncode != 0 and refusal in refused.stderr, (args, refused)
        assert "Traceback" not in refused.stderr
    with pytest.raises(NewerStore, match="upgrade planledger"):
        open_runtime(store)
    if before:
        assert Path(store).read_bytes() == before  # never touched
    assert _written(store) == (FORMAT + 1, "9.9.9")


@pytest.mark.parametrize("row", ["'seven', '0.9'", "1, 2", "NULL, 'x'"])
def test_a_format_row_altered_into_nonsense_is_refused_not_misread(
    row: str, tmp_path: Path,
) -> None:
    store = str(tmp_path / "ledger.sqlite")
    open_runtime(store).close()
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute(f"DROP TABLE {FORMAT_TABLE}")
        conn.execute(f"CREATE TABLE {FORMAT_TABLE} (id, format, written_by)")
        conn.execute(f"INSERT INTO {FORMAT_TABLE} VALUES (1, {row})")
    refused = _planledger("plan", "list", "--db", store)
    assert refused.returncode == 1 and "store format row" in refused.stderr, refused
    assert "Traceback" not in refused.stderr
    with pytest.raises(NewerStore, match="altered, or written by another program"):
        open_runtime(store)


def test_the_version_a_newer_store_names_reaches_the_terminal_without_escapes(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "ledger.sqlite")
    open_runtime(store).close()
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute(f"UPDATE {FORMAT_TABLE} SET format = ?, written_by = ?",
                     (FORMAT + 1, "9.9\x1b[2J\n" + "x" * 500))
    refused = _planledger("plan", "list", "--db", store)
    assert refused.returncode == 1 and "written by planledger 9.9[2J" in refused.stderr
    assert "\x1b" not in refused.stderr and "x" * 33 not in refused.stderr
