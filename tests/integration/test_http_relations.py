"""Step relations over HTTP (ledger.domain.relations): a plan made with an epic, its
children, a step that arrives done with a note, labels, links and beads' priorities; the
epic refused while a child is open and closed by the last child's completion; a recording
of it all that imports and re-executes byte for byte."""

from pathlib import Path

from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from planledger.replays.format import write_file
from planledger.replays.reading import read_file
from planledger.replays.recording import export, import_into
from planledger.replays.rerun import rerun
from tests.support import LOCAL
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import author, session

PLAN = {"slug": "auth", "title": "Auth", "steps": [
    {"key": "epic", "title": "Refresh tokens", "priority": "P1"},
    {"key": "rotate", "title": "Rotate", "parent": "epic", "labels": ["backend"]},
    {"key": "limit", "title": "Limit", "parent": "epic", "priority": "P0",
     "links": [{"kind": "related", "target": "bd-a1b2"}]},
    {"key": "old", "title": "Old work", "parent": "epic", "done": True,
     "note": "closed in beads by alice"}]}


def _client(runtime: Runtime) -> TestClient:
    client = TestClient(create_app(runtime, Settings(db="memory")), base_url=LOCAL)
    client.headers.update(author(client))
    return client


def test_a_plan_with_an_epic_answers_its_relations_and_rolls_up_its_children(
    runtime: Runtime,
) -> None:
    client = _client(runtime)
    made = client.post("/api/plans", json=PLAN)
    assert made.status_code == 201, made.text
    assert made.json()["steps"][1]["labels"] == ["backend"]
    epic = client.get("/api/steps/auth%2Fepic").json()
    assert (epic["priority"], epic["children"]) == (1, "1/3 children done")
    assert [b["ref"] for b in epic["blockers"]] == ["auth#2", "auth#3"]
    limit = client.get("/api/steps/auth%233").json()
    assert (limit["priority"], limit["parent"], limit["parent_ref"]) == (0, epic["step_id"],
                                                                        "auth#1")
    assert limit["links"] == [{"kind": "related", "target": "bd-a1b2"}]
    assert "labels" not in limit and "discovered_from" not in limit  # empty: left out
    old = client.get("/api/steps/auth%2Fold").json()
    assert old["status"] == "done"
    assert [e["type"] for e in old["history"]][-2:] == ["StepCompleted", "StepNoted"]


def test_the_epic_is_refused_while_a_child_is_open_and_closes_with_the_last(
    runtime: Runtime, clock: FakeClock,
) -> None:
    client = _client(runtime)
    assert client.post("/api/plans", json=PLAN).status_code == 201
    _, agent = session(client, "agent")
    refused = client.post("/api/steps/auth%231/claim", headers=agent)
    assert refused.status_code == 409
    assert 'waits on auth#2 "Rotate" (open), auth#3 "Limit" (open)' in refused.json()["message"]
    found = client.post("/api/plans/auth/steps", headers=agent, json={
        "title": "Fix the refresh race", "discovered_from": "auth/rotate", "parent": "auth#1",
        "priority": "P2"})
    assert found.status_code == 201, found.text
    assert found.json()["discovered_from"] == client.get("/api/steps/auth%232").json()["id"]
    for step in ("auth%232", "auth%233", "auth%235"):
        clock.advance(1)
        fence = client.post(f"/api/steps/{step}/claim", headers=agent).json()["fence"]
        done = client.post(f"/api/steps/{step}/complete", json={"fence": fence}, headers=agent)
        assert done.status_code == 200, done.text
    epic = client.get("/api/steps/auth%231").json()
    assert (epic["status"], epic["children"]) == ("done", "4/4 children done")
    entries = client.get("/api/timeline").json()["entries"]
    closed = [e for e in entries if e["text"].endswith("closed: its last child finished")]
    assert [e["step_number"] for e in closed] == [1]
    assert any("discovered while working on" in e["text"] for e in entries)


def test_a_bad_priority_or_parent_is_a_422_naming_the_field(runtime: Runtime) -> None:
    client = _client(runtime)
    assert client.post("/api/plans", json=PLAN).status_code == 201
    for priority in ("P9", True, False):
        bad = client.post("/api/plans/auth/steps", json={"title": "x", "priority": priority})
        assert bad.status_code == 422 and "priority" in bad.text, (priority, bad.text)
    orphan = client.post("/api/plans/auth/steps", json={"title": "x", "parent": "nope"})
    assert orphan.status_code == 422 and "parent" in orphan.text, orphan.text


def test_a_recording_with_relations_imports_and_reexecutes_identically(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    client = _client(runtime)
    assert client.post("/api/plans", json=PLAN).status_code == 201
    _, agent = session(client, "agent")
    assert client.post("/api/plans/auth/steps", headers=agent, json={
        "title": "Found", "discovered_from": "auth#2", "done": True}).status_code == 201
    for step in ("auth%232", "auth%233"):
        clock.advance(1)
        fence = client.post(f"/api/steps/{step}/claim", headers=agent).json()["fence"]
        client.post(f"/api/steps/{step}/complete", json={"fence": fence}, headers=agent)
    assert runtime.store.step(client.get("/api/steps/auth%231").json()["id"]).status == "done"
    path = tmp_path / "relations.jsonl"
    write_file(export(runtime.store), path)

    report = rerun(read_file(path))
    assert report.identical, report.describe()
    imported = open_runtime("memory", clock=FakeClock(), ids=SequentialIds())
    try:
        assert import_into(imported.store, read_file(path)) == len(read_file(path).events)
    finally:
        imported.close()
