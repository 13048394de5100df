"""Step references over HTTP: `plan#N` and `plan/key` wherever a step id is accepted, in
paths (`#` percent-encoded; `/` as it is or encoded) and bodies, answered beside the id."""

import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import open_runtime
from planledger.api.settings import Settings
from tests.support import LOCAL
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import author, session

PLAN = {
    "slug": "auth-refresh", "title": "Refresh-token rotation",
    "steps": [{"key": "rotate", "title": "Rotate refresh tokens"},
              {"key": "ui", "title": "Checkout UI"},
              {"key": "limit", "title": "Rate-limit POST /auth/refresh",
               "depends_on": ["ui"]}],
}


@pytest.fixture
def client(clock: FakeClock) -> TestClient:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    app = create_app(runtime, Settings(db="memory", lease_default=120))
    client = TestClient(app, base_url=LOCAL)
    client.headers.update(author(client))
    return client


def _ids(client: TestClient) -> list[str]:
    made = client.post("/api/plans", json=PLAN)
    assert made.status_code == 201, made.text
    steps = made.json()["steps"]
    assert [s["ref"] for s in steps] == ["auth-refresh#1", "auth-refresh#2", "auth-refresh#3"]
    assert [s["key"] for s in steps] == ["rotate", "ui", "limit"]
    return [s["step_id"] for s in steps]


@pytest.mark.parametrize("path", ["auth-refresh%232", "auth-refresh/ui", "auth-refresh%2Fui",
                                  "ui"])
def test_a_step_is_claimed_shown_and_completed_by_its_reference_in_the_path(
        client: TestClient, path: str) -> None:
    _, ui, _ = _ids(client)
    _, as_a = session(client, "agent A")
    claimed = client.post(f"/api/steps/{path}/claim", headers=as_a)
    assert claimed.status_code == 200, claimed.text
    assert (claimed.json()["step_id"], claimed.json()["ref"]) == (ui, "auth-refresh#2")
    shown = client.get(f"/api/steps/{path}").json()
    assert (shown["step_id"], shown["ref"], shown["key"]) == (ui, "auth-refresh#2", "ui")
    done = client.post(f"/api/steps/{path}/complete",
                       json={"fence": claimed.json()["fence"]}, headers=as_a)
    assert done.status_code == 200, done.text
    assert (done.json()["status"], done.json()["ref"]) == ("done", "auth-refresh#2")
    # The log holds the id: no event names the reference.
    log = client.get("/api/log", params={"limit": 1000}).text
    assert "auth-refresh#2" not in log and "auth-refresh/ui" not in log


def test_a_blocked_claim_names_its_blockers_by_reference(client: TestClient) -> None:
    _, ui, limit = _ids(client)
    _, as_a = session(client, "agent A")
    refused = client.post("/api/steps/auth-refresh%2Flimit/claim", headers=as_a)
    assert refused.status_code == 409
    body = refused.json()
    assert body["step_id"] == limit and body["blockers"][0]["step_id"] == ui
    assert body["message"] == ('task blocked: step auth-refresh#3 "Rate-limit POST '
                               '/auth/refresh" waits on auth-refresh#2 "Checkout UI" (open)')
    ready = client.get("/api/plans/auth-refresh/ready").json()
    assert ready["blocked"][0]["blockers"][0]["ref"] == "auth-refresh#2"


def test_references_are_accepted_in_bodies_and_a_new_step_takes_a_key(
        client: TestClient) -> None:
    rotate, _, _ = _ids(client)
    added = client.post("/api/plans/auth-refresh/steps", json={
        "title": "Emit metrics", "key": "alert", "depends_on": ["auth-refresh#1"]})
    assert added.status_code == 201, added.text
    assert (added.json()["ref"], added.json()["key"]) == ("auth-refresh#4", "alert")
    assert added.json()["depends_on"] == [rotate]
    depended = client.post("/api/steps/auth-refresh%2Falert/dependencies",
                           json={"depends_on": ["auth-refresh/ui"]})
    assert depended.status_code == 200, depended.text
    assert len(depended.json()["depends_on"]) == 2
    taken = client.post("/api/plans/auth-refresh/steps", json={"title": "x", "key": "alert"})
    assert taken.status_code == 422 and "unique within its plan" in taken.json()["message"]


@pytest.mark.parametrize("path", ["auth-refresh%239", "auth-refresh%230", "nope%231",
                                  "auth-refresh/nope", "auth-refresh%23-1",
                                  "auth-refresh%2399999999999999999999"])
def test_an_unknown_reference_is_a_step_not_found(client: TestClient, path: str) -> None:
    _ids(client)
    shown = client.get(f"/api/steps/{path}")
    assert shown.status_code == 404, shown.text
    assert shown.json()["message"].startswith('step not found: "')


def test_a_bare_key_in_two_plans_is_refused_naming_both(client: TestClient) -> None:
    _ids(client)
    other = {**PLAN, "slug": "billing"}
    assert client.post("/api/plans", json=other).status_code == 201
    refused = client.get("/api/steps/ui")
    assert refused.status_code == 422
    assert refused.json()["reason"] == "ambiguous_reference"
    assert refused.json()["candidates"] == ["auth-refresh/ui", "billing/ui"]
    assert "auth-refresh/ui" in refused.json()["message"]
    assert "billing/ui" in refused.json()["message"]


@pytest.mark.parametrize("dependency", ["", "auth-refresh#9", "nope/ui", "#", "a/b/c",
                                        "auth-refresh/nope"])
def test_a_dependency_naming_no_step_is_refused_as_such_in_a_new_plan_and_a_new_step(
        client: TestClient, dependency: str) -> None:
    _ids(client)
    plan = {"slug": "billing", "title": "Billing",
            "steps": [{"key": "a", "title": "A", "depends_on": [dependency]}]}
    for made in (client.post("/api/plans", json=plan),
                 client.post("/api/plans/auth-refresh/steps",
                             json={"title": "x", "depends_on": ["rotate", dependency]})):
        assert made.status_code == 422, made.text
        assert made.json()["reason"] == "unknown_dependency"
        assert f'{dependency}' in made.json()["message"]
    assert client.get("/api/plans/billing").status_code == 404  # nothing half-written
    assert len(client.get("/api/plans/auth-refresh").json()["steps"]) == 3


def test_a_sessions_holds_name_each_step_by_reference(client: TestClient) -> None:
    _, ui, _ = _ids(client)
    agent, as_agent = session(client, "agent A")
    assert client.post("/api/steps/auth-refresh%231/claim", headers=as_agent).status_code == 200
    assert client.post(f"/api/steps/{ui}/claim", headers=as_agent).status_code == 200

    holds = client.get(f"/api/sessions/{agent}").json()["holds"]

    assert sorted(h["ref"] for h in holds) == ["auth-refresh#1", "auth-refresh#2"]
