"""Tokens: a session's token is the only way to act for it; the admin token may
force-release; tokens survive restarts, work on every replica, and never reach the log."""

import os

import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from planledger.infra.secret import secret_path
from tests.support import LOCAL
from tests.support.fakes import FakeClock
from tests.support.live_server import live_server, session
from tests.support.seed import seed_auth_refresh

ADMIN = "admin-token-for-tests-0123456789abcdef"


@pytest.fixture
def step(file_runtime: Runtime) -> str:
    return seed_auth_refresh(file_runtime.ledger)[4]


def _client(file_runtime: Runtime, admin: str | None = None) -> TestClient:
    app = create_app(file_runtime, Settings(db=file_runtime.db, admin_token=admin))
    return TestClient(app, base_url=LOCAL)


def test_another_sessions_token_cannot_complete_or_release_the_claim(
    file_runtime: Runtime, step: str,
) -> None:
    with live_server(file_runtime) as server, server.client() as http:
        a_id, as_a = session(http, "agent A")
        _, as_b = session(http, "agent B")
        assert http.post(f"/api/steps/{step}/claim", headers=as_a).status_code == 200
        for action in ("complete", "release", "drop"):
            refused = http.post(f"/api/steps/{step}/{action}", headers=as_b)
            assert refused.status_code == 409, action
            assert refused.json()["reason"] == "not_holder"
            assert refused.json()["holder"] == a_id
        shown = http.get(f"/api/steps/{step}").json()
    assert shown["status"] == "in_progress" and shown["holder"] == a_id


def test_a_forged_or_missing_token_is_refused_before_anything_happens(
    file_runtime: Runtime, step: str,
) -> None:
    client = _client(file_runtime)
    a_id, as_a = session(client, "agent A")
    client.post(f"/api/steps/{step}/claim", headers=as_a)
    forged = {"Authorization": f"Bearer {a_id}.not-the-signature"}
    position = file_runtime.store.recorder.max_notification_id()
    for headers in (forged, {}, {"Authorization": "Bearer garbage"}):
        refused = client.post(f"/api/steps/{step}/release", headers=headers)
        assert refused.status_code == 401
        assert refused.json()["reason"] == "unauthorized"
    assert file_runtime.store.recorder.max_notification_id() == position
    assert client.get(f"/api/steps/{step}").json()["holder"] == a_id


def test_a_session_can_end_only_itself(file_runtime: Runtime) -> None:
    client = _client(file_runtime)
    a_id, _ = session(client, "agent A")
    _, as_b = session(client, "agent B")
    refused = client.post(f"/api/sessions/{a_id}/end", headers=as_b)
    assert refused.status_code == 403
    assert client.get(f"/api/sessions/{a_id}").json()["ended"] is False


def test_only_the_admin_token_force_releases(file_runtime: Runtime, step: str) -> None:
    without_admin = _client(file_runtime)
    _, as_a = session(without_admin, "agent A")
    without_admin.post(f"/api/steps/{step}/claim", headers=as_a)
    # With no admin token configured, the would-be token is no credential at all.
    assert without_admin.post(f"/api/steps/{step}/force-release",
                              headers={"Authorization": f"Bearer {ADMIN}"}).status_code == 401
    with_admin = _client(file_runtime, admin=ADMIN)
    refused = with_admin.post(f"/api/steps/{step}/force-release", headers=as_a)
    assert refused.status_code == 403 and refused.json()["needs"] == "admin"
    forced = with_admin.post(f"/api/steps/{step}/force-release",
                             headers={"Authorization": f"Bearer {ADMIN}"})
    assert forced.status_code == 200 and forced.json()["released"] is True
    assert with_admin.get(f"/api/steps/{step}").json()["claimable"] is True


def test_a_token_works_after_a_restart_and_on_another_replica(
    file_runtime: Runtime, db: str, step: str, clock: FakeClock,
) -> None:
    a_id, as_a = session(_client(file_runtime), "agent A")
    replica = open_runtime(db, clock=clock)  # a second process's view of the same file
    try:
        claimed = _client(replica).post(f"/api/steps/{step}/claim", headers=as_a)
    finally:
        replica.close()
    assert claimed.status_code == 200 and claimed.json()["holder"] == a_id
    assert oct(os.stat(secret_path(db)).st_mode & 0o777) == "0o600"


def test_tokens_never_reach_the_event_log(file_runtime: Runtime, step: str) -> None:
    client = _client(file_runtime)
    started = client.post("/api/sessions", json={"name": "A"},
                          headers={"Idempotency-Key": "start-1"}).json()
    token = started["token"]
    as_a = {"Authorization": f"Bearer {token}", "Idempotency-Key": "k1"}
    client.post(f"/api/steps/{step}/claim", headers=as_a)
    log = client.get("/api/log", params={"limit": 1000}).text
    assert token not in log
    assert token.rpartition(".")[2] not in log
