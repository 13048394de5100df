"""Plans and steps over HTTP: one call creates a plan with constraints and dependent
steps; progress, ready/blocked, revisions, history; claim-next says why nothing is ready."""

import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import open_runtime
from planledger.api.settings import Settings
from tests.support import LOCAL
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import author, session

PLAN = {
    "slug": "docs", "title": "Docs refresh",
    "constraints": {"plain-words": "say it plainly"},
    "steps": [{"key": "intro", "title": "Write the introduction"},
              {"key": "tour", "title": "Write the tour", "depends_on": ["intro"]}],
}


@pytest.fixture
def client(clock: FakeClock) -> TestClient:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    app = create_app(runtime, Settings(db="memory", lease_default=120))
    client = TestClient(app, base_url=LOCAL)
    client.headers.update(author(client))  # plan changes name their author
    return client


def test_a_plan_with_constraints_and_dependent_steps_in_one_call(client: TestClient) -> None:
    made = client.post("/api/plans", json=PLAN)
    assert made.status_code == 201
    intro, tour = made.json()["steps"]
    assert (intro["key"], tour["depends_on"]) == ("intro", [intro["step_id"]])
    shown = client.get("/api/plans/docs").json()
    assert shown["constraints"] == PLAN["constraints"]
    assert shown["progress"]["line"] == "0/2 done, 1 claimable, 0 in flight"
    ready = client.get("/api/plans/docs/ready").json()
    assert [s["step_id"] for s in ready["ready"]] == [intro["step_id"]]
    assert [b["step_id"] for b in ready["blocked"][0]["blockers"]] == [intro["step_id"]]
    again = client.post("/api/plans", json=PLAN)
    assert again.status_code == 409 and again.json()["reason"] == "plan_exists"


def test_steps_are_added_revised_and_carry_their_history(client: TestClient) -> None:
    client.post("/api/plans", json=PLAN)
    _, as_a = session(client, "agent A")
    added = client.post("/api/plans/docs/steps", json={"title": "Proofread"}, headers=as_a)
    assert added.status_code == 201
    step = added.json()["step_id"]
    revised = client.patch(f"/api/steps/{step}", json={"title": "Proofread twice"})
    assert revised.json()["title"] == "Proofread twice"
    assert [s["title"] for s in client.get("/api/plans/docs/steps").json()][-1] == (
        "Proofread twice")
    history = client.get(f"/api/steps/{step}").json()["history"]
    assert [e["type"] for e in history] == ["StepAdded", "StepOpened", "StepRevised"]


def test_the_server_default_lease_applies_when_a_claim_names_none(
    client: TestClient, clock: FakeClock,
) -> None:
    intro = client.post("/api/plans", json=PLAN).json()["steps"][0]["step_id"]
    _, as_a = session(client, "agent A")
    granted = client.post(f"/api/steps/{intro}/claim", headers=as_a).json()
    held = client.get(f"/api/steps/{intro}").json()
    assert granted["expires_at"] == held["expires_at"]
    clock.advance(121)
    assert client.get(f"/api/steps/{intro}").json()["lapsed_holder"] == granted["holder"]


def test_claim_next_says_why_nothing_is_ready(client: TestClient) -> None:
    client.post("/api/plans", json={"slug": "empty", "title": "Nothing yet"})
    intro = client.post("/api/plans", json=PLAN).json()["steps"][0]["step_id"]
    _, as_a = session(client, "agent A")
    assert client.post("/api/plans/empty/claim-next", headers=as_a).json()["reason"] == "empty"
    client.post(f"/api/steps/{intro}/claim", headers=as_a)
    blocked = client.post("/api/plans/docs/claim-next", headers=as_a).json()
    assert blocked["claimed"] is None and blocked["reason"] == "none_ready"
    client.post(f"/api/steps/{intro}/drop", headers=as_a)
    tour = client.post("/api/plans/docs/claim-next", headers=as_a).json()["claimed"]
    client.post(f"/api/steps/{tour['step_id']}/complete", headers=as_a)
    done = client.post("/api/plans/docs/claim-next", headers=as_a).json()
    assert done["reason"] == "all_done"
    lines = {p["slug"]: p["progress"]["line"] for p in client.get("/api/plans").json()}
    assert lines == {"docs": "1/2 done, 0 claimable, 0 in flight, 1 dropped",
                     "empty": "0/0 done, 0 claimable, 0 in flight"}
