"""The seed's story over a real socket: two agents, one step, one claim lands, the other
bounces naming the holder and pivots to the next step; both steps ship."""

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from planledger.api.runtime import Runtime, open_runtime
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server
from tests.support.seed import AUTH_REFRESH_STEPS, seed_auth_refresh

RATE_LIMIT, METRICS = AUTH_REFRESH_STEPS[4], AUTH_REFRESH_STEPS[5]


@pytest.fixture
def sqlite_runtime(tmp_path: Path, clock: FakeClock) -> Iterator[Runtime]:
    runtime = open_runtime(str(tmp_path / "ledger.sqlite"), clock=clock, ids=SequentialIds())
    yield runtime
    runtime.close()


@pytest.fixture
def server(sqlite_runtime: Runtime) -> Iterator[LiveServer]:
    seed_auth_refresh(sqlite_runtime.ledger)
    with live_server(sqlite_runtime) as live:
        yield live


def _agent(server: LiveServer, name: str) -> tuple[str, httpx.Client]:
    with server.client() as anonymous:
        started = anonymous.post("/api/sessions", json={"name": name})
    assert started.status_code == 201
    body = started.json()
    return body["session_id"], server.client(body["token"])


def test_second_agent_bounces_naming_holder_then_claims_the_next_step(
    server: LiveServer,
) -> None:
    a_id, agent_a = _agent(server, "agent A")
    b_id, agent_b = _agent(server, "agent B")
    with agent_a, agent_b:
        seen_a = agent_a.get("/api/plans/auth-refresh/ready").json()["ready"]
        seen_b = agent_b.get("/api/plans/auth-refresh/ready").json()["ready"]
        assert [s["title"] for s in seen_a] == [RATE_LIMIT, METRICS] == [
            s["title"] for s in seen_b]
        step5, step6 = seen_a[0]["step_id"], seen_a[1]["step_id"]

        landed = agent_b.post(f"/api/steps/{step5}/claim")
        assert landed.status_code == 200
        assert landed.json()["holder"] == b_id

        bounced = agent_a.post(f"/api/steps/{step5}/claim")
        assert bounced.status_code == 409
        body = bounced.json()
        assert body["reason"] == "already_claimed"
        assert body["holder"] == b_id and body["step_id"] == step5
        assert body["message"].startswith(f'task already claimed: held by "{b_id}"')

        pivot = agent_a.post(f"/api/steps/{step6}/claim")
        assert pivot.status_code == 200 and pivot.json()["title"] == METRICS

        assert agent_b.post(f"/api/steps/{step5}/complete").json()["status"] == "done"
        assert agent_a.post(f"/api/steps/{step6}/complete").json()["status"] == "done"
        shown = agent_a.get("/api/plans/auth-refresh").json()
    assert shown["progress"]["line"] == "6/6 done, 0 claimable, 0 in flight"
    assert a_id != b_id


def test_the_bounce_is_in_the_log_and_the_steps_history(server: LiveServer) -> None:
    a_id, agent_a = _agent(server, "agent A")
    b_id, agent_b = _agent(server, "agent B")
    with agent_a, agent_b:
        assert agent_b.get("/api/plans/auth-refresh/ready").status_code == 200  # not recorded
        step5 = agent_a.post("/api/plans/auth-refresh/ready").json()["ready"][0]["step_id"]
        agent_b.post(f"/api/steps/{step5}/claim")
        agent_a.post(f"/api/steps/{step5}/claim")
        history = agent_a.get(f"/api/steps/{step5}").json()["history"]
        log = agent_a.get("/api/log", params={"after": 0, "limit": 1000}).json()
        timeline = agent_a.get("/api/timeline", params={"plan": "auth-refresh"}).json()
    bounces = [e for e in history if e["type"] == "ClaimBounced"]
    assert [(e["session_id"], e["data"]["holder"]) for e in bounces] == [(a_id, b_id)]
    assert "ClaimBounced" in [e["type"] for e in log["events"]]
    listed = [e for e in log["events"] if e["type"] == "ReadyListed"]
    assert [e["session_id"] for e in listed] == [a_id]
    bounced = [e for e in timeline["entries"] if e["kind"] == "bounced"]
    assert [(e["session_id"], e["holder"]) for e in bounced] == [(a_id, b_id)]
    assert f'task already claimed: held by "{b_id}"' in bounced[0]["text"]
    assert {lane["label"] for lane in timeline["lanes"]} >= {"agent A", "agent B"}


def test_claim_next_skips_the_held_step_and_says_why_when_nothing_is_left(
    server: LiveServer,
) -> None:
    _, agent_a = _agent(server, "agent A")
    b_id, agent_b = _agent(server, "agent B")
    with agent_a, agent_b:
        first = agent_b.post("/api/plans/auth-refresh/claim-next").json()
        second = agent_a.post("/api/plans/auth-refresh/claim-next").json()
        third = agent_a.post("/api/plans/auth-refresh/claim-next").json()
    assert first["claimed"]["title"] == RATE_LIMIT and first["claimed"]["holder"] == b_id
    assert second["claimed"]["title"] == METRICS
    assert third["claimed"] is None and third["reason"] == "all_held"
