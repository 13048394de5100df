"""`planledger keys` as a real process: the operator of the file issues keys, a real
`planledger serve` then requires one on every request, `--url` commands send
PLANLEDGER_KEY, and `serve` beyond loopback refuses a store without keys."""

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_cli_server import PLANLEDGER, server  # noqa: F401 - a fixture


def run(*args: str, env: dict[str, str] | None = None, code: int = 0,
        ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([PLANLEDGER, *args], check=False, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "200", **(env or {})})
    assert done.returncode == code, (args, done.stdout, done.stderr)
    return done


@pytest.fixture
def db(tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path / "ledger.sqlite")


def test_create_prints_the_key_alone_on_its_last_line(db: str) -> None:
    made = run("keys", "create", "--name", "ci-bot", "--role", "worker", "--db", db)
    key = made.stdout.strip().splitlines()[-1]
    assert key.startswith("plk_") and len(key) > 40 and " " not in key
    as_json = json.loads(run("keys", "create", "--name", "lead", "--role", "planner",
                             "--db", db, "--json").stdout)
    assert set(as_json) == {"name", "role", "key"} and as_json["role"] == "planner"
    listed = run("keys", "list", "--db", db).stdout
    assert "ci-bot" in listed and "lead" in listed and key not in listed
    assert key not in Path(db).read_bytes().decode("latin-1")  # only its hash is kept


def test_bad_input_is_refused_with_a_message_not_a_traceback(db: str) -> None:
    odd = run("keys", "create", "--name", "x y", "--role", "worker", "--db", db, code=1)
    assert "name" in odd.stderr and "Traceback" not in odd.stderr
    role = run("keys", "create", "--name", "x", "--role", "owner", "--db", db, code=1)
    assert "roles are reader, worker, planner, admin" in role.stderr
    gone = run("keys", "revoke", "nobody", "--db", db, code=1)
    assert "no live key" in gone.stderr


def test_serve_beyond_loopback_refuses_a_store_without_keys(db: str) -> None:
    refused = run("serve", "--db", db, "--host", "0.0.0.0", "--port", "1", code=1)
    assert "planledger keys create" in refused.stderr


def test_a_running_server_requires_the_key_the_file_issued(
        server: tuple[str, Path], tmp_path: Path) -> None:  # noqa: F811
    url, _ = server
    db = str(tmp_path / "ledger.sqlite")  # the server's own file
    admin = run("keys", "create", "--name", "root", "--role", "admin", "--db", db
                ).stdout.split()[-1]
    assert httpx.get(f"{url}/api/plans").status_code == 401  # the server sees it at once
    as_admin = {"PLANLEDGER_URL": url, "PLANLEDGER_KEY": admin}
    worker = json.loads(run("keys", "create", "--name", "bot", "--role", "worker", "--json",
                            env=as_admin).stdout)["key"]
    as_worker = {"PLANLEDGER_URL": url, "PLANLEDGER_KEY": worker}
    started = json.loads(run("session", "start", "--name", "bot 1", "--json",
                             env=as_worker).stdout)
    assert started["role"] == "worker" and started["key"] == "bot"
    assert json.loads(run("plan", "list", "--json", env=as_worker).stdout) == []
    refused = run("keys", "list", env=as_worker, code=1)
    assert "admin" in refused.stderr
    run("keys", "revoke", "bot", env=as_admin)
    assert "revoked" in run("plan", "list", env=as_worker, code=1).stderr
