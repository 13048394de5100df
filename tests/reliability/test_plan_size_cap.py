"""Steps per request: a plan creation carrying more steps than the server's cap
(`PLANLEDGER_MAX_STEPS_PER_REQUEST`, default 1000) is refused before anything is written,
naming the cap and how to raise it, over HTTP, MCP and the command line; and while a plan
of the cap's size is written, other agents' claims keep being answered."""

import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import (
    DEFAULT_MAX_STEPS_PER_REQUEST,
    MAX_STEPS_SETTING,
    Settings,
    load_settings,
)
from planledger.bench.servers import start_replica
from planledger.main import run as cli
from tests.reliability.conftest import Served
from tests.support import LOCAL
from tests.support.cli_runner import CliRunner
from tests.support.fakes import SequentialIds
from tests.support.live_server import session


@pytest.fixture
def file_runtime(tmp_path: Path) -> Iterator[Runtime]:
    # the system clock: leases must not lapse while the test claims for real
    runtime = open_runtime(str(tmp_path / "ledger.sqlite"), ids=SequentialIds())
    yield runtime
    runtime.close()


def _plan(slug: str, count: int) -> dict[str, Any]:
    return {"slug": slug, "title": slug, "steps": [{"title": f"step {i}"} for i in range(count)]}


def _position(runtime: Runtime) -> int:
    return runtime.store.recorder.max_notification_id() or 0


def test_a_plan_over_the_cap_is_refused_naming_the_cap_and_the_setting(
    file_runtime: Runtime,
) -> None:
    client = TestClient(create_app(file_runtime, Settings(db=file_runtime.db)), base_url=LOCAL)
    _, as_a = session(client, "agent A")
    position = _position(file_runtime)
    refused = client.post("/api/plans", headers=as_a,
                          json=_plan("too-long", DEFAULT_MAX_STEPS_PER_REQUEST + 1))
    assert refused.status_code == 422, refused.text
    body = refused.json()
    assert (body["reason"], body["field"]) == ("invalid_input", "steps")
    assert str(DEFAULT_MAX_STEPS_PER_REQUEST) in body["message"]
    assert MAX_STEPS_SETTING in body["message"]
    assert _position(file_runtime) == position


def test_the_cap_is_the_servers_setting(file_runtime: Runtime) -> None:
    settings = replace(Settings(db=file_runtime.db), max_steps_per_request=5)
    client = TestClient(create_app(file_runtime, settings), base_url=LOCAL)
    _, as_a = session(client, "agent A")
    assert client.post("/api/plans", headers=as_a, json=_plan("five", 5)).status_code == 201
    refused = client.post("/api/plans", headers=as_a, json=_plan("six", 6))
    assert refused.status_code == 422 and "at most 5" in refused.json()["message"]


def test_the_setting_is_read_from_the_environment_and_checked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    db = str(tmp_path / "ledger.sqlite")
    monkeypatch.setenv(MAX_STEPS_SETTING, "250")
    assert load_settings(db=db).max_steps_per_request == 250
    monkeypatch.setenv(MAX_STEPS_SETTING, "0")
    with pytest.raises(ValueError, match=MAX_STEPS_SETTING):
        load_settings(db=db)


def test_mcp_plans_create_over_the_cap_is_a_tool_error_naming_the_cap(served: Served) -> None:
    from tests.reliability.test_lone_surrogates import _tool

    _, http = served.session("capped")
    try:
        token = http.headers["Authorization"].split()[1]
        text = _tool(http, "plans_create", {
            "slug": "mcp-too-long", "title": "t", "token": token,
            "steps": [f"step {i}" for i in range(DEFAULT_MAX_STEPS_PER_REQUEST + 1)]})
        assert MAX_STEPS_SETTING in text and str(DEFAULT_MAX_STEPS_PER_REQUEST) in text
    finally:
        http.close()


def test_plan_create_against_a_server_over_the_cap_says_so(
    served: Served, tmp_path: Path,
) -> None:
    plan = tmp_path / "plan.yaml"
    steps = "".join(f"  - title: step {i}\n"
                    for i in range(DEFAULT_MAX_STEPS_PER_REQUEST + 1))
    plan.write_text(f"slug: cli-too-long\ntitle: Too long\nsteps:\n{steps}")
    _, http = served.session("cli")
    token = http.headers["Authorization"].split()[1]
    http.close()
    result = CliRunner().invoke(cli, ["plan", "create", str(plan), "--url", served.url,
                                      "--token", token])
    assert result.exit_code == 1, result.output
    assert MAX_STEPS_SETTING in result.output


def _claim_latencies(http: httpx.Client, steps: list[str], until: threading.Event | None,
                     ) -> list[float]:
    """Claim `steps` one after another (all of them, or until `until` is set); each
    claim's round trip in seconds. Every claim must be granted."""
    seconds = []
    for step in steps:
        if until is not None and until.is_set():
            break
        started = time.perf_counter()
        answer = http.post(f"/api/steps/{step}/claim")
        seconds.append(time.perf_counter() - started)
        assert answer.status_code == 200, answer.text
    return seconds


def test_claims_stay_answered_while_a_plan_of_the_caps_size_is_written(
    tmp_path: Path,
) -> None:
    # `planledger serve` in its own process, as deployed: in the test's own process the
    # test's threads would share the server's interpreter lock and blur what is measured.
    cap = DEFAULT_MAX_STEPS_PER_REQUEST
    server = start_replica(str(tmp_path / "ledger.sqlite"))
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            _, as_a = session(http, "agent A")
            http.headers.update(as_a)
            steps = [s["step_id"] for part in ("work-1", "work-2")
                     for s in http.post("/api/plans", json=_plan(part, cap)).json()["steps"]]
            _claim_latencies(http, steps[:30], None)  # warm: connection, read model, caches
            baseline = _claim_latencies(http, steps[30:330], None)

            written = threading.Event()
            answers: list[httpx.Response] = []

            def write_big_plans() -> None:
                with httpx.Client(base_url=server.url, timeout=60, headers=as_a) as writer:
                    for round_ in range(3):
                        answers.append(writer.post("/api/plans", json=_plan(f"big-{round_}",
                                                                            cap)))
                written.set()

            writer = threading.Thread(target=write_big_plans)
            writer.start()
            during = _claim_latencies(http, steps[330:], written)
            writer.join()
    finally:
        server.stop()

    assert [a.status_code for a in answers] == [201, 201, 201], [a.text for a in answers]
    assert len(during) >= 10, during  # claims were answered all along, not queued behind
    # Most claims are answered as fast as usual; the few that meet the plan's one write
    # transaction wait for it (bench/http.py measures both).
    usual = statistics.quantiles(baseline, n=10)[-1]  # the baseline's 90th percentile
    assert statistics.median(during) <= 3 * usual, (statistics.median(during), usual)
