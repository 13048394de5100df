"""Schema creation on PostgreSQL: one explicit, locked step that many processes may run."""

import subprocess
import sys
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from planledger.api.runtime import open_runtime
from planledger.infra.pg_append import APPEND_FUNCTION
from planledger.infra.pg_schema import init_schema, missing_objects
from planledger.ledger.storage import postgres_options
from tests.support.postgres import BASE_URL, fresh_schema
from tests.support.processes import processes

TIMEOUT = 60
PLANLEDGER = str(Path(sys.executable).parent / "planledger")  # the installed command


def _init_together(url: str, barrier: Barrier, out: Any) -> None:
    barrier.wait(TIMEOUT)
    try:
        out.put(("ok", init_schema(url).created))
    except Exception as error:  # the report is the assertion: any error fails the test
        out.put(("error", repr(error)))


def test_eight_processes_initialising_one_schema_at_once_create_it_exactly_once() -> None:
    with fresh_schema(init=False) as url:
        ctx = processes()
        barrier, out = ctx.Barrier(8), ctx.Queue()
        procs = [ctx.Process(target=_init_together, args=(url, barrier, out)) for _ in range(8)]
        for p in procs:
            p.start()
        results = [out.get(timeout=TIMEOUT) for _ in procs]
        for p in procs:
            p.join(TIMEOUT)
        assert [kind for kind, _ in results] == ["ok"] * 8, results
        creators = [created for _, created in results if created]
        assert len(creators) == 1 and "table" in creators[0]
        assert missing_objects(url) == ()


def test_db_init_reports_what_it_created_then_that_all_is_there() -> None:
    with fresh_schema(init=False) as url:
        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([PLANLEDGER, "db", *args, "--db", url],
                                  capture_output=True, text=True, timeout=TIMEOUT, check=False)

        assert run("status").returncode == 1
        first = run("init")
        assert first.returncode == 0 and "created schema, table" in first.stdout
        again = run("init")
        assert again.returncode == 0 and "already initialised" in again.stdout
        assert run("status").stdout.strip() == "ready"


def _a_replica_opened_starts_a_session(url: str, name: str) -> None:
    runtime = open_runtime(url)
    try:
        session = runtime.ledger.start_session(name)
        assert runtime.store.session(session.id).name == name
    finally:
        runtime.close()


def test_a_replica_opened_on_an_empty_schema_initialises_it_and_works() -> None:
    with fresh_schema(init=False) as url:
        _a_replica_opened_starts_a_session(url, "first")


def test_a_schema_made_before_the_append_function_gets_it_on_the_next_start() -> None:
    with fresh_schema() as url:
        schema = postgres_options(url)["schema"]
        with psycopg.connect(BASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP FUNCTION {}.{}").format(
                sql.Identifier(schema), sql.Identifier(APPEND_FUNCTION)))
        assert missing_objects(url) == ("append function",)
        _a_replica_opened_starts_a_session(url, "after the upgrade")
        assert missing_objects(url) == ()


def test_db_init_that_fails_part_way_changes_nothing_and_says_why() -> None:
    """A table of planledger's name made by someone else (its answers table without the
    column planledger indexes): init fails on it, and creates none of the rest."""
    with fresh_schema(init=False) as url:
        schema = postgres_options(url)["schema"]
        with psycopg.connect(BASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
            conn.execute(sql.SQL("CREATE TABLE {}.planledger_answers (key text)").format(
                sql.Identifier(schema)))

        failed = subprocess.run([PLANLEDGER, "db", "init", "--db", url], capture_output=True,
                                text=True, timeout=TIMEOUT, check=False)

        assert failed.returncode != 0
        assert "Traceback" not in failed.stderr
        assert f"PostgreSQL schema {schema}: cannot create" in failed.stderr
        assert "nothing was changed" in failed.stderr and "recorded_at" in failed.stderr
        with psycopg.connect(BASE_URL, autocommit=True) as conn:
            tables = conn.execute("SELECT table_name FROM information_schema.tables "
                                  "WHERE table_schema = %s", (schema,)).fetchall()
            functions = conn.execute("SELECT proname FROM pg_proc JOIN pg_namespace n ON "
                                     "n.oid = pronamespace WHERE nspname = %s",
                                     (schema,)).fetchall()
        assert tables == [("planledger_answers",)] and functions == []

        with psycopg.connect(BASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP TABLE {}.planledger_answers").format(
                sql.Identifier(schema)))
        assert init_schema(url).created and missing_objects(url) == ()
