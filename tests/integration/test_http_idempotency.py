"""Idempotency keys: a retried write gets its first answer and appends nothing, after a
restart, on another replica, and when the retries race each other."""

import sqlite3

import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from planledger.infra.sqlite_answers import ANSWERS_TABLE
from tests.support import LOCAL
from tests.support.fakes import FakeClock
from tests.support.live_server import live_server, post_together, session
from tests.support.seed import seed_auth_refresh


@pytest.fixture
def steps(file_runtime: Runtime) -> list[str]:
    return list(seed_auth_refresh(file_runtime.ledger))


def _client(file_runtime: Runtime) -> TestClient:
    return TestClient(create_app(file_runtime, Settings(db=file_runtime.db)), base_url=LOCAL)


def _position(file_runtime: Runtime) -> int:
    return file_runtime.store.recorder.max_notification_id() or 0


def test_a_retried_claim_returns_the_first_answer_and_appends_nothing(
    file_runtime: Runtime, steps: list[str], clock: FakeClock,
) -> None:
    client = _client(file_runtime)
    _, as_a = session(client, "agent A")
    keyed = {**as_a, "Idempotency-Key": "claim-step-5"}
    first = client.post(f"/api/steps/{steps[4]}/claim", headers=keyed)
    position = _position(file_runtime)
    clock.advance(60)  # a fresh claim now would be a heartbeat with a later expiry
    retry = client.post(f"/api/steps/{steps[4]}/claim", headers=keyed)
    assert first.status_code == retry.status_code == 200
    assert retry.content == first.content  # byte for byte
    assert _position(file_runtime) == position


def test_a_retried_bounce_replays_the_same_refusal_and_appends_nothing(
    file_runtime: Runtime, steps: list[str],
) -> None:
    client = _client(file_runtime)
    _, as_a = session(client, "agent A")
    _, as_b = session(client, "agent B")
    client.post(f"/api/steps/{steps[4]}/claim", headers=as_b)
    keyed = {**as_a, "Idempotency-Key": "a-claims-5"}
    first = client.post(f"/api/steps/{steps[4]}/claim", headers=keyed)
    position = _position(file_runtime)
    client.post(f"/api/steps/{steps[4]}/release", headers=as_b)  # now it would land
    retry = client.post(f"/api/steps/{steps[4]}/claim", headers=keyed)
    assert first.status_code == retry.status_code == 409
    assert retry.content == first.content  # byte for byte
    assert _position(file_runtime) == position + 1  # only B's release


def test_the_first_answer_survives_a_restart_and_serves_every_replica(
    file_runtime: Runtime, steps: list[str], db: str, clock: FakeClock,
) -> None:
    client = _client(file_runtime)
    _, as_a = session(client, "agent A")
    keyed = {**as_a, "Idempotency-Key": "next-please"}
    first = client.post("/api/plans/auth-refresh/claim-next", headers=keyed)
    position = _position(file_runtime)
    restarted = open_runtime(db, clock=clock)
    try:
        retry = _client(restarted).post("/api/plans/auth-refresh/claim-next", headers=keyed)
    finally:
        restarted.close()
    assert retry.json() == first.json() and first.json()["claimed"]["title"]
    assert _position(file_runtime) == position


def test_a_key_reused_for_another_request_is_refused(
    file_runtime: Runtime, steps: list[str],
) -> None:
    client = _client(file_runtime)
    _, as_a = session(client, "agent A")
    keyed = {**as_a, "Idempotency-Key": "one-key"}
    client.post(f"/api/steps/{steps[4]}/claim", headers=keyed)
    reused = client.post(f"/api/steps/{steps[5]}/claim", headers=keyed)
    assert reused.status_code == 422
    assert reused.json()["reason"] == "idempotency_key_reused"
    assert client.get(f"/api/steps/{steps[5]}").json()["claimable"] is True


def test_racing_retries_of_one_write_land_it_once(file_runtime: Runtime, steps: list[str]) -> None:
    with live_server(file_runtime) as server, server.client() as http:
        _, as_a = session(http, "agent A")
        keyed = {**as_a, "Idempotency-Key": "racing-retries"}
        clients = [server.client() for _ in range(8)]
        answers = post_together(clients, f"/api/steps/{steps[4]}/claim", headers=keyed)
        history = http.get(f"/api/steps/{steps[4]}").json()["history"]
        log = http.get("/api/log", params={"limit": 1000}).json()["events"]
    assert {r.status_code for r in answers} == {200}
    assert len({r.text for r in answers}) == 1
    assert [e["type"] for e in history].count("StepClaimed") == 1
    assert "LeaseRenewed" not in [e["type"] for e in history]
    assert "AnswerRecorded" not in [e["type"] for e in log]  # kept beside the log, once:
    with sqlite3.connect(file_runtime.db) as store:
        assert store.execute(f"SELECT count(*) FROM {ANSWERS_TABLE}").fetchone()[0] == 1


def test_a_write_without_a_key_is_not_deduplicated(file_runtime: Runtime, steps: list[str]) -> None:
    client = _client(file_runtime)
    _, as_a = session(client, "agent A")
    client.post(f"/api/steps/{steps[4]}/claim", headers=as_a)
    again = client.post(f"/api/steps/{steps[4]}/claim", headers=as_a)
    assert again.json()["renewed"] is True
