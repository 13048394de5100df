"""Sixteen HTTP clients race for one step over real sockets: exactly one claim lands."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from planledger.api.runtime import Runtime, open_runtime
from tests.support.live_server import LiveServer, live_server, post_together
from tests.support.seed import seed_auth_refresh

CLIENTS = 16


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    runtime: Runtime = open_runtime(str(tmp_path / "ledger.sqlite"))
    seed_auth_refresh(runtime.ledger)
    with live_server(runtime) as live:
        yield live
    runtime.close()


def _sessions(server: LiveServer, count: int) -> list[tuple[str, str]]:
    with server.client() as anonymous:
        started = [anonymous.post("/api/sessions", json={"name": f"agent {i}"}).json()
                   for i in range(count)]
    return [(s["session_id"], s["token"]) for s in started]


def test_sixteen_concurrent_claims_one_lands_the_rest_bounce_naming_it(
    server: LiveServer,
) -> None:
    agents = _sessions(server, CLIENTS)
    with server.client() as reader:
        step = reader.get("/api/plans/auth-refresh/ready").json()["ready"][0]["step_id"]
    clients = [server.client(token) for _, token in agents]
    answers = post_together(clients, f"/api/steps/{step}/claim")

    statuses = sorted(r.status_code for r in answers)
    assert statuses == [200] + [409] * (CLIENTS - 1)
    winner = next(r.json()["holder"] for r in answers if r.status_code == 200)
    assert {r.json()["holder"] for r in answers if r.status_code == 409} == {winner}
    with server.client() as reader:
        shown = reader.get(f"/api/steps/{step}").json()
    assert shown["holder"] == winner and shown["fence"] == 1
    claims = [e for e in shown["history"] if e["type"] == "StepClaimed"]
    assert len(claims) == 1
