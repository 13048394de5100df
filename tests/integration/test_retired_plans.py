"""A finished plan retires from the read model (its detail leaves memory) once more plans
have finished after it, and every question about it is answered as before: the plan, its
steps and their histories, the plan list, ready, its timeline and the console's pages,
read back from the log. An event that names it brings it back."""

from typing import Any

import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import Runtime
from planledger.api.settings import Settings
from planledger.ledger.application import NewStep
from planledger.ledger.domain.ids import PlanSlug
from planledger.projections.checkpoints import MemoryCheckpointRecorder
from planledger.projections.readmodel import ReadModel
from planledger.projections.view import FINISHED_KEPT
from tests.support import LOCAL, OPERATOR
from tests.support.fakes import FakeClock

STORY = PlanSlug("story")


@pytest.fixture
def client(runtime: Runtime) -> TestClient:
    client = TestClient(create_app(runtime, Settings(db=runtime.db)), base_url=LOCAL)
    client.headers.update(session(client, "planner")[1])  # plans name their author
    return client


def session(client: TestClient, name: str) -> tuple[str, dict[str, str]]:
    """A new session's id, and the headers that act for it."""
    started = ok(client.post("/api/sessions", json={"name": name}), 201)
    return started["session_id"], {"Authorization": f"Bearer {started['token']}"}


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json()


def finish_story(client: TestClient) -> list[str]:
    """A plan that finished through bounces, a stale fence, a release, a drop, a ready
    listing and a claim refused on a closed step; both of its sessions ended."""
    steps = ok(client.post("/api/plans", json={"slug": STORY, "title": "Story", "steps": [
        {"key": "a", "title": "A"}, {"key": "b", "title": "B", "depends_on": ["a"]},
        {"key": "c", "title": "C"}, {"key": "d", "title": "D"}]}), 201)["steps"]
    a, b, c, d = (s["step_id"] for s in steps)
    alice_id, alice = session(client, "alice")
    bob_id, bob = session(client, "bob")
    fence = ok(client.post(f"/api/steps/{a}/claim", headers=alice))["fence"]
    ok(client.post(f"/api/steps/{a}/claim", headers=bob), 409)  # bounces off alice
    ok(client.post(f"/api/steps/{a}/complete", headers=alice, json={"fence": fence}))
    fence = ok(client.post(f"/api/steps/{b}/claim", headers=bob))["fence"]
    ok(client.post(f"/api/steps/{b}/complete", headers=bob, json={"fence": fence + 1}), 409)
    ok(client.post(f"/api/steps/{b}/complete", headers=bob, json={"fence": fence}))
    ok(client.post(f"/api/plans/{STORY}/ready", headers=alice))
    fence = ok(client.post(f"/api/steps/{c}/claim", headers=alice))["fence"]
    ok(client.post(f"/api/steps/{c}/release", headers=alice, json={"fence": fence}))
    fence = ok(client.post(f"/api/steps/{c}/claim", headers=alice))["fence"]
    ok(client.post(f"/api/steps/{c}/complete", headers=alice, json={"fence": fence}))
    ok(client.post(f"/api/steps/{d}/drop"))
    ok(client.post(f"/api/steps/{a}/claim", headers=bob), 409)  # closed
    ok(client.post(f"/api/sessions/{alice_id}/end", headers=alice))
    ok(client.post(f"/api/sessions/{bob_id}/end", headers=bob))
    return [a, b, c, d]


def finish_others(client: TestClient, count: int, prefix: str = "other") -> None:
    """`count` one-step plans, each claimed and completed by a session of its own."""
    for i in range(count):
        step = ok(client.post("/api/plans", json={"slug": f"{prefix}-{i}", "title": "O",
                                                  "steps": [{"title": "x"}]}), 201)["steps"]
        who_id, who = session(client, f"worker {i}")
        fence = ok(client.post(f"/api/steps/{step[0]['step_id']}/claim", headers=who))["fence"]
        ok(client.post(f"/api/steps/{step[0]['step_id']}/complete", headers=who,
                       json={"fence": fence}))
        ok(client.post(f"/api/sessions/{who_id}/end", headers=who))


def retired(runtime: Runtime) -> set[PlanSlug]:
    runtime.reads.catch_up()
    return set(runtime.reads.view.finished)


def shown(client: TestClient, steps: list[str]) -> dict[str, Any]:
    """Everything a person or an agent can ask about the story plan."""
    listed = [p for p in ok(client.get("/api/plans")) if p["slug"] == STORY]
    console = ok(client.get("/api/console", params={"plan": STORY}))
    return {
        "plan": ok(client.get(f"/api/plans/{STORY}")),
        "steps": [ok(client.get(f"/api/steps/{s}")) for s in steps],
        "listed": listed,
        "ready": ok(client.get(f"/api/plans/{STORY}/ready")),
        "timeline": ok(client.get("/api/timeline", params={"plan": STORY})),
        "console": [d for d in console["details"] if d["slug"] == STORY],
        "console steps": {k: v for k, v in ok(client.get(
            "/api/console/steps", params={"plan": STORY})).items() if k != "position"},
        "console timeline": ok(client.get("/api/console/timeline", params={"plan": STORY})),
        "next": ok(client.post(f"/api/plans/{STORY}/claim-next",
                               headers=session(client, "late")[1])),
    }


def test_a_retired_plan_is_shown_as_it_was_before_it_retired(
        client: TestClient, runtime: Runtime) -> None:
    steps = finish_story(client)
    before = shown(client, steps)
    finish_others(client, FINISHED_KEPT)
    assert STORY in retired(runtime)  # its detail left the read model
    assert not set(steps) & set(runtime.reads.view.steps)
    assert shown(client, steps) == before
    assert STORY in retired(runtime)  # read back, not brought back


def test_the_store_lets_go_of_a_retired_plan_and_keeps_no_head_of_an_answer(
        client: TestClient, runtime: Runtime) -> None:
    steps = finish_story(client)
    finish_others(client, FINISHED_KEPT)
    runtime.reads.catch_up()
    cache = runtime.store.cache
    assert cache is not None
    for stream in [f"plan:{STORY}", *steps]:
        with pytest.raises(KeyError):
            cache.get(stream)
    ok(client.post("/api/sessions", json={"name": "once"},
                   headers={"Idempotency-Key": "only-once"}), 201)
    heads = runtime.store.events.heads._heads  # type: ignore[attr-defined]
    assert not [s for s in heads if s.startswith("idem:")]


def test_reopening_a_step_of_a_retired_plan_brings_it_back(
        client: TestClient, runtime: Runtime) -> None:
    a, *_ = finish_story(client)
    finish_others(client, FINISHED_KEPT)
    ok(client.post(f"/api/steps/{a}/reopen"))
    assert STORY not in retired(runtime)
    ready = ok(client.get(f"/api/plans/{STORY}/ready"))
    assert [s["step_id"] for s in ready["ready"]] == [a]
    assert ok(client.get(f"/api/plans/{STORY}"))["progress"]["line"] == (
        "2/4 done, 1 claimable, 0 in flight, 1 dropped")
    history = ok(client.get(f"/api/steps/{a}"))["history"]
    assert [e["type"] for e in history][-2:] == ["ClaimRefused", "StepReopened"]


def test_a_refused_claim_on_a_retired_step_joins_its_history(
        client: TestClient, runtime: Runtime) -> None:
    a, *_ = finish_story(client)
    progress = ok(client.get(f"/api/plans/{STORY}"))["progress"]
    finish_others(client, FINISHED_KEPT)
    before = ok(client.get(f"/api/steps/{a}"))
    ok(client.post(f"/api/steps/{a}/claim", headers=session(client, "late")[1]), 409)
    assert STORY not in retired(runtime)
    after = ok(client.get(f"/api/steps/{a}"))
    assert after["history"][:-1] == before["history"]
    assert after["history"][-1]["type"] == "ClaimRefused"
    assert ok(client.get(f"/api/plans/{STORY}"))["progress"] == progress
    finish_others(client, FINISHED_KEPT + 1, prefix="more")
    assert STORY in retired(runtime)  # finished still: it retires again
    assert ok(client.get(f"/api/steps/{a}")) == after


def test_retiring_depends_on_the_log_only_whatever_the_pages_or_the_checkpoint(
        runtime: Runtime, clock: FakeClock) -> None:
    for i in range(12):  # plans finishing, reopened and added to, among open ones
        _, (first, second) = runtime.ledger.create_plan(
            f"p-{i}", "P", steps=[NewStep("first"), NewStep("second")], actor=OPERATOR)
        agent = runtime.ledger.start_session(f"agent {i}").id
        runtime.ledger.complete(runtime.ledger.claim(first, agent).step_id, agent)
        if i % 3:
            runtime.ledger.drop(second, OPERATOR)
        if i % 4 == 1:
            runtime.ledger.reopen(first, OPERATOR)
        if i == 10:
            runtime.ledger.add_step("p-2", "late", actor=OPERATOR)
        runtime.ledger.end_session(agent)
    small, big = (ReadModel(runtime.store, clock, page=page, finished_kept=2)
                  for page in (3, 1000))
    for position in range(0, runtime.store.log_end(), 5):
        small.wait_for(position)
    assert small.catch_up() == big.catch_up()
    assert small.view.finished and small.facts() == big.facts()
    recorder = MemoryCheckpointRecorder()
    saved = ReadModel(runtime.store, clock, checkpoints=recorder, finished_kept=2)
    saved.catch_up()
    saved.close(checkpoint=True)
    resumed = ReadModel(runtime.store, clock, checkpoints=recorder, finished_kept=2)
    assert resumed.resumed_from == saved.position
    assert resumed.facts() == big.facts()
