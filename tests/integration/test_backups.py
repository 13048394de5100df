"""Backups: `planledger db backup FILE` copies a live SQLite store under load (SQLite's
online backup), `planledger db restore FILE` puts a copy in place; the copy verifies and a
server on it answers as the original did. On PostgreSQL, pg_dump and pg_restore, and a
server on the restored database serves (README, Backups)."""

import os
import subprocess
import threading
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest

from planledger.bench.servers import PLANLEDGER, SECRET, Agent, Replica, create_plan, start_replica
from tests.support.postgres import BASE_URL, fresh_schema

ENV = {**os.environ, "PLANLEDGER_SECRET": SECRET}


def _planledger(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PLANLEDGER, *args], capture_output=True, text=True, timeout=120,
                          env=ENV, check=False)


def _answers(replica: Replica) -> dict[str, object]:
    """What a server says of its plans: each plan's progress and its ready list."""
    plans = httpx.get(f"{replica.url}/api/plans", timeout=30).json()
    return {p["slug"]: (p, httpx.get(f"{replica.url}/api/plans/{p['slug']}/ready",
                                      timeout=30).json()) for p in plans}


def _some_work(replica: Replica) -> None:
    """Two plans, one step claimed and one completed."""
    steps: list[dict[str, object]] = [{"key": f"s{i}", "title": f"step {i}"} for i in range(4)]
    first = create_plan(replica, "first", steps)
    create_plan(replica, "second", steps[:2])
    agent = Agent(replica, "worker")
    fence = agent.claim(first[0]).json()["fence"]
    agent.complete(first[0], fence).raise_for_status()
    agent.claim(first[1]).raise_for_status()
    agent.close()


@pytest.mark.slow
def test_a_backup_under_load_holds_every_write_acknowledged_before_it_began(
    tmp_path: Path,
) -> None:
    db, copy = str(tmp_path / "ledger.sqlite"), str(tmp_path / "copy.sqlite")
    server = start_replica(db)
    acknowledged: list[str] = []
    stop = threading.Event()

    def write_plans(writer: int) -> None:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            agent = http.post("/api/sessions", json={"name": f"w{writer}"}).json()
            http.headers["Authorization"] = f"Bearer {agent['token']}"
            n = 0
            while not stop.is_set():
                slug = f"w{writer}-{n}"
                body = {"slug": slug, "title": slug, "steps": [{"title": "a"}, {"title": "b"}]}
                if http.post("/api/plans", json=body).status_code == 201:
                    acknowledged.append(slug)
                n += 1

    writers = [threading.Thread(target=write_plans, args=(i,)) for i in range(3)]
    try:
        for writer in writers:
            writer.start()
        while len(acknowledged) < 30:  # under way
            stop.wait(0.05)
        before = set(acknowledged)
        backed_up = _planledger("db", "backup", copy, "--db", db)
        while len(acknowledged) < len(before) + 30:  # and going on after the copy
            stop.wait(0.05)
    finally:
        stop.set()
        for writer in writers:
            writer.join()
        server.stop()
    assert backed_up.returncode == 0, backed_up.stderr
    assert "the store's secret is not in it" in backed_up.stdout
    verified = _planledger("audit", "verify", "--db", copy)
    assert verified.returncode == 0 and "intact:" in verified.stdout, verified.stdout
    on_copy = start_replica(copy)
    try:
        slugs = set(_answers(on_copy))
    finally:
        on_copy.stop()
    assert before <= slugs  # nothing acknowledged before the backup began is lost
    assert slugs < set(acknowledged)  # and it is a copy as of then, not of the end


def test_a_server_on_a_restored_store_answers_the_same_plans_and_ready_lists(
    tmp_path: Path,
) -> None:
    db, copy = str(tmp_path / "ledger.sqlite"), str(tmp_path / "backup.sqlite")
    restored = str(tmp_path / "elsewhere" / "ledger.sqlite")
    server = start_replica(db)
    try:
        _some_work(server)
        assert _planledger("db", "backup", copy, "--db", db).returncode == 0
        expected = _answers(server)
    finally:
        server.stop()
    put_back = _planledger("db", "restore", copy, "--db", restored)
    assert put_back.returncode == 0, put_back.stderr
    on_restored = start_replica(restored)
    try:
        assert _answers(on_restored) == expected
    finally:
        on_restored.stop()


def test_backup_and_restore_refuse_what_would_lose_or_misplace_data(tmp_path: Path) -> None:
    db, copy = str(tmp_path / "ledger.sqlite"), str(tmp_path / "backup.sqlite")
    assert _planledger("session", "start", "--db", db).returncode == 0
    assert _planledger("db", "backup", copy, "--db", db).returncode == 0

    again = _planledger("db", "backup", copy, "--db", db)
    assert again.returncode == 1 and "already exists" in again.stderr

    onto_live = _planledger("db", "restore", copy, "--db", db)
    assert onto_live.returncode == 1 and "holds 1 events" in onto_live.stderr
    assert "--replace" in onto_live.stderr
    assert _planledger("db", "restore", copy, "--db", db, "--replace").returncode == 0

    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database")
    not_a_store = _planledger("db", "restore", str(junk), "--db", str(tmp_path / "new.sqlite"))
    assert not_a_store.returncode == 1 and "not a database" in not_a_store.stderr

    on_postgres = _planledger("db", "backup", copy, "--db", f"{BASE_URL}?schema=x")
    assert on_postgres.returncode == 2 and "pg_dump" in on_postgres.stderr
    for answer in (again, onto_live, not_a_store, on_postgres):
        assert "Traceback" not in answer.stderr


def test_a_postgres_database_restored_from_pg_dump_serves_the_same_answers(
    tmp_path: Path,
) -> None:
    dump = str(tmp_path / "planledger.dump")
    database = f"restored_{uuid.uuid4().hex[:12]}"
    with fresh_schema() as url:
        server = start_replica(url)
        try:
            _some_work(server)
            expected = _answers(server)
        finally:
            server.stop()
        schema = url.rsplit("schema=", 1)[1]
        subprocess.run(["pg_dump", "--format=custom", f"--schema={schema}", f"--file={dump}",
                        BASE_URL.split("?")[0]], check=True, timeout=120)
    with psycopg.connect(BASE_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    restored = BASE_URL.rsplit("/", 1)[0] + f"/{database}"
    try:
        subprocess.run(["pg_restore", "--no-owner", f"--dbname={restored}", dump],
                       check=True, timeout=120)
        on_restored = start_replica(f"{restored}?schema={schema}")
        try:
            assert _answers(on_restored) == expected
        finally:
            on_restored.stop()
    finally:
        with psycopg.connect(BASE_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
