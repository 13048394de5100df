"""Store trouble on SQLite: a full disk, a file locked by another process, a read-only store.
Clients get 503 with a message naming the trouble (and Retry-After), reads keep working, no
write lands half-way, the log's chain stays whole, and writes resume by themselves when
the store is back, without a restart."""

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from planledger.bench.disk_full import can_mount, server_on_small_disk
from planledger.bench.servers import SECRET, Replica, free_port, start_replica
from tests.support.live_server import author

PLANLEDGER = str(Path(sys.executable).parent / "planledger")
BODY = "x" * 15_000


def _write(http: httpx.Client, slug: str) -> httpx.Response:
    return http.post("/api/plans", json={"slug": slug, "title": slug,
                                         "steps": [{"title": "s", "body": BODY}]})


def _assert_refused(answer: httpx.Response, trouble: str) -> None:
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == "1"
    assert answer.json()["reason"] == "store_unavailable"
    assert trouble in answer.json()["message"]


# --- a full disk ---------------------------------------------------------------------


def _inside(server: Replica, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nsenter", "-t", str(server.process.pid), "-m", *command],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.slow
@pytest.mark.skipif(not can_mount(), reason="needs mount namespaces (unshare -m) to fill a disk")
def test_a_full_disk_answers_503_naming_it_and_writes_resume_when_space_is_back() -> None:
    with server_on_small_disk("600k") as server, \
            httpx.Client(base_url=server.url, timeout=30) as http:
        http.headers.update(author(http))  # before the disk fills: a session is a write
        written = 0
        while (answer := _write(http, f"plan-{written}")).status_code == 201:
            written += 1
            assert written < 200, "the disk never filled"
        _assert_refused(answer, "the store is full")
        assert http.get("/api/plans").status_code == 200  # reads keep working
        assert _write(http, "still-full").status_code == 503

        where = str(Path(server.db).parent)  # the tmpfs only the server's namespace sees
        assert _inside(server, "mount", "-o", "remount,size=8m", where).returncode == 0
        assert _write(http, "after").status_code == 201
        slugs = {p["slug"] for p in http.get("/api/plans").json()}
        assert slugs == {*(f"plan-{i}" for i in range(written)), "after"}
        verified = _inside(server, "env", f"PLANLEDGER_SECRET={SECRET}",  # checks the head
                           PLANLEDGER, "audit", "verify", "--db", server.db)
        assert verified.returncode == 0 and "intact:" in verified.stdout


# --- a file locked by another process -----------------------------------------------


@pytest.mark.slow
def test_a_locked_file_makes_writes_wait_then_503_and_they_resume_when_it_is_unlocked(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "ledger.sqlite")
    server = start_replica(db, {"PLANLEDGER_SQLITE_LOCK_TIMEOUT": "1"})
    try:
        with httpx.Client(base_url=server.url, timeout=30) as http:
            http.headers.update(author(http))
            assert _write(http, "before").status_code == 201
            locker = sqlite3.connect(db, isolation_level=None)
            locker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
            try:
                started = time.monotonic()
                _assert_refused(_write(http, "while-locked"), "locked by another process")
                assert time.monotonic() - started >= 1.0  # it waited for the lock first
                assert http.get("/api/plans").status_code == 200
            finally:
                locker.execute("ROLLBACK")
                locker.close()
            assert _write(http, "after").status_code == 201
            assert {p["slug"] for p in http.get("/api/plans").json()} == {"before", "after"}
    finally:
        server.stop()
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)


# --- a read-only store ----------------------------------------------------------------


def _without_root_privilege() -> list[str]:
    """Root ignores file modes; drop the capabilities that let it, so it meets them."""
    if os.geteuid() != 0:
        return []
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--bounding-set={caps}", f"--inh-caps={caps}"]


def test_a_read_only_store_is_refused_with_a_message_naming_it(tmp_path: Path) -> None:
    db = tmp_path / "store" / "ledger.sqlite"
    subprocess.run([PLANLEDGER, "session", "start", "--db", str(db)], check=True,
                   capture_output=True)
    for path in (*db.parent.iterdir(), db.parent):
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        port = free_port()
        served = subprocess.run(
            [*_without_root_privilege(), PLANLEDGER, "serve", "--db", str(db), "--port",
             str(port)], capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "PLANLEDGER_SECRET": SECRET})
    finally:
        for path in (db.parent, *db.parent.iterdir()):
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert served.returncode == 1
    assert "the store is read-only" in served.stderr and "Traceback" not in served.stderr
    server = start_replica(str(db))  # writable again: the same store serves
    try:
        assert httpx.post(f"{server.url}/api/sessions", json={}).status_code == 201
    finally:
        server.stop()
