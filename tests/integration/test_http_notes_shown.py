"""Handoff notes read back through every door that promises them, over HTTP: the step's
history (`GET /api/steps/{id}`), the timelines (`GET /api/timeline`, all of it and a
plan's), the console's timeline (`GET /api/console/timeline`), and the next claim's
answer; the same after the read model is folded again from the log."""

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import open_runtime
from planledger.api.settings import Settings
from tests.support import LOCAL
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import author, session

HANDOFF = "blocked on the schema migration; tried X"
LATER = "the migration landed:\nrun `make migrate` first"


@pytest.fixture
def client(clock: FakeClock) -> Iterator[TestClient]:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    yield TestClient(create_app(runtime, Settings(db="memory")), base_url=LOCAL)
    runtime.close()


def noted_step(client: TestClient) -> tuple[str, str]:
    """A step released with a note, then noted again by someone else: its id and the
    releasing session's."""
    made = client.post("/api/plans", headers=author(client), json={
        "slug": "p", "title": "P", "steps": [{"title": "migrate"}, {"title": "other"}]})
    assert made.status_code == 201, made.text
    step = made.json()["steps"][0]["step_id"]
    first, headers = session(client, "agent A")
    assert client.post(f"/api/steps/{step}/claim", headers=headers).status_code == 200
    released = client.post(f"/api/steps/{step}/release", headers=headers,
                           json={"fence": 1, "note": HANDOFF})
    assert released.status_code == 200, released.text
    _, other = session(client, "agent C")
    assert client.post(f"/api/steps/{step}/notes", headers=other,
                       json={"text": LATER}).status_code == 201
    return step, first


def _notes_in(entries: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in entries if e["kind"] == "noted"]


def test_a_steps_history_holds_its_notes_in_log_order(client: TestClient) -> None:
    step, first = noted_step(client)

    history = client.get(f"/api/steps/{step}").json()["history"]

    noted = [e for e in history if e["type"] == "StepNoted"]
    assert [e["data"] for e in noted] == [{"text": HANDOFF, "after": "release"},
                                          {"text": LATER, "after": None}]
    assert noted[0]["session_id"] == first
    types = [e["type"] for e in history]
    assert types.index("StepReleased") < types.index("StepNoted")


def test_the_timelines_and_the_consoles_show_the_notes(client: TestClient) -> None:
    step, _ = noted_step(client)
    said = [f"note on step 1: {HANDOFF}", "note on step 1: the migration landed:"]

    for path, params in (("/api/timeline", {}), ("/api/timeline", {"plan": "p"}),
                         ("/api/console/timeline", {"plan": "p"})):
        answer = client.get(path, params=params)
        assert answer.status_code == 200, (path, answer.text)
        assert _notes_in(answer.json()["entries"]) == said, (path, params)
        assert all(e["step_id"] == step for e in answer.json()["entries"]
                   if e["kind"] == "noted")


def test_the_next_claim_is_handed_the_notes(client: TestClient) -> None:
    step, _ = noted_step(client)
    _, headers = session(client, "agent B")

    claimed = client.post(f"/api/steps/{step}/claim", headers=headers)

    assert claimed.status_code == 200, claimed.text
    assert [(n["text"], n["after"]) for n in claimed.json()["notes"]] == [
        (HANDOFF, "release"), (LATER, None)]


def test_notes_show_after_the_read_model_is_folded_again(tmp_path: Any) -> None:
    db = str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db, ids=SequentialIds())
    with TestClient(create_app(runtime, Settings(db=db)), base_url=LOCAL) as live:
        step, _ = noted_step(live)
    runtime.close()
    again = open_runtime(db)  # a new process: the read model folds the log from the start
    try:
        with TestClient(create_app(again, Settings(db=db)), base_url=LOCAL) as reopened:
            history = reopened.get(f"/api/steps/{step}").json()["history"]
            entries = reopened.get("/api/timeline", params={"plan": "p"}).json()["entries"]
    finally:
        again.close()
    assert [e["data"]["text"] for e in history if e["type"] == "StepNoted"] == [HANDOFF, LATER]
    assert len(_notes_in(entries)) == 2
