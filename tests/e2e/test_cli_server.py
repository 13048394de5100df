"""`planledger serve` as a real process, and the command line against it with --url:
sessions by token, a bounce with exit 3, and another session's token refused."""

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from planledger.api.cli import EXIT_BOUNCED
from planledger.api.runtime import open_checkpoints, open_runtime
from planledger.bench.servers import create_plan, start_replica
from planledger.main import run as app
from tests.e2e.test_cli_embedded import PLAN_YAML
from tests.support.cli_runner import CliRunner

PLANLEDGER = str(Path(sys.executable).parent / "planledger")
START_TIMEOUT = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`planledger serve` on a free port and a fresh SQLite file; its URL and its output."""
    port = _free_port()
    out = tmp_path / "serve.log"
    env = {**os.environ, "PLANLEDGER_DB": str(tmp_path / "ledger.sqlite"),
           "PLANLEDGER_PORT": str(port)}
    env.pop("PLANLEDGER_SECRET", None)
    with out.open("wb") as log:
        process = subprocess.Popen([PLANLEDGER, "serve"], env=env, stdout=log,
                                   stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    while True:  # poll with a deadline: only for the server to come up
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise RuntimeError(f"planledger serve did not start:\n{out.read_text()}")
        time.sleep(0.05)
    try:
        yield url, out
    finally:
        process.terminate()
        process.wait(15)


def _cli(url: str, *args: str, code: int = 0, token: str | None = None) -> Any:
    env = {"PLANLEDGER_URL": url, "COLUMNS": "200"}
    if token:
        env["PLANLEDGER_TOKEN"] = token
    result = CliRunner().invoke(app, [*args, "--json"], env=env)
    assert result.exit_code == code, (args, result.output, result.stderr)
    return json.loads(result.output) if code == 0 else result.stderr


def test_the_cli_works_against_a_running_server(
    server: tuple[str, Path], tmp_path: Path,
) -> None:
    url, out = server
    banner = out.read_text()
    assert f"open {url}/ (the console)" in banner and f"{url}/docs" in banner
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(PLAN_YAML)
    s4, s5, _ = (s["step_id"] for s in _cli(url, "plan", "create", str(plan_file))["steps"])
    a = _cli(url, "session", "start", "--name", "agent A")
    b = _cli(url, "session", "start", "--name", "agent B")
    _cli(url, "claim", s4, token=a["token"])
    _cli(url, "complete", s4, token=a["token"])

    granted = _cli(url, "claim", s5, token=b["token"])
    assert granted["holder"] == b["session_id"]
    bounced = _cli(url, "claim", s5, token=a["token"], code=EXIT_BOUNCED)
    assert f'task already claimed: held by "{b["session_id"]}"' in bounced
    not_yours = _cli(url, "release", s5, token=a["token"], code=EXIT_BOUNCED)
    assert "not the holder" in not_yours

    ready = _cli(url, "ready", "auth-refresh", token=a["token"])
    assert [s["title"] for s in ready["ready"]] == [
        "Emit metrics and an alert for refresh-reuse revocations"]
    held = _cli(url, "session", "show", b["session_id"])["holds"]
    assert [h["step_id"] for h in held] == [s5]
    ended = _cli(url, "session", "end", token=b["token"])
    assert ended["released"] == [s5]
    log = _cli(url, "log", "--limit", "1000")
    assert "ClaimBounced" in [e["type"] for e in log["events"]]
    listed = [e["session_id"] for e in log["events"] if e["type"] == "ReadyListed"]
    assert listed == [a["session_id"]]  # `ready` with a session records what it was shown
    _cli(url, "ready", "auth-refresh")  # without one it only reads
    again = _cli(url, "log", "--limit", "1000")["events"]
    assert [e["session_id"] for e in again if e["type"] == "ReadyListed"] == listed


def test_no_server_at_the_url_is_an_error_not_a_crash() -> None:
    message = _cli(f"http://127.0.0.1:{_free_port()}", "plan", "list", code=1)
    assert "cannot reach the server" in message


def test_a_server_shutting_down_saves_its_read_model_for_the_next_start(tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.sqlite")
    replica = start_replica(db)
    try:
        create_plan(replica, "p", [{"title": f"step {i}"} for i in range(5)])
        httpx.get(f"{replica.url}/api/plans/p", timeout=30).raise_for_status()
    finally:
        replica.stop()  # SIGTERM: uvicorn shuts down gracefully, then the signal ends it
    checkpoints = open_checkpoints(db)
    try:
        saved = checkpoints.load_checkpoint("planledger")
    finally:
        checkpoints.close()
    reader = open_runtime(db)
    try:
        assert saved is not None and saved[0] == reader.store.recorder.max_notification_id()
    finally:
        reader.close()
