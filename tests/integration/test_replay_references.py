"""A recording made by agents that named steps by reference (`plan#N`, `plan/key`, a bare
key) over HTTP holds ids only, and re-executes byte for byte."""

from pathlib import Path

from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import Runtime
from planledger.api.settings import Settings
from planledger.replays.format import write_file
from planledger.replays.reading import read_file
from planledger.replays.recording import export
from planledger.replays.rerun import rerun
from tests.support import LOCAL
from tests.support.fakes import FakeClock
from tests.support.live_server import author, session


def test_a_recording_made_with_references_reexecutes_identically(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    client = TestClient(create_app(runtime, Settings(db="memory")), base_url=LOCAL)
    client.headers.update(author(client))
    made = client.post("/api/plans", json={"slug": "auth-refresh", "title": "Refresh", "steps": [
        {"key": "rotate", "title": "Rotate"}, {"key": "bd-a1b2", "title": "Checkout UI"},
        {"key": "limit", "title": "Limit", "depends_on": ["bd-a1b2"]}]})
    assert made.status_code == 201
    _, as_a = session(client, "agent A")
    _, as_b = session(client, "agent B")
    for call in (
        client.post("/api/plans/auth-refresh/steps", json={
            "title": "Alert", "key": "alert", "depends_on": ["auth-refresh#1"]}),
        client.post("/api/steps/auth-refresh%2Flimit/dependencies",
                    json={"depends_on": ["auth-refresh/rotate"]}),
        client.post("/api/steps/bd-a1b2/claim", headers=as_a),
        client.post("/api/steps/auth-refresh%232/heartbeat", headers=as_a),
        client.post("/api/steps/auth-refresh/bd-a1b2/notes", json={"text": "half"},
                    headers=as_b),
        client.post("/api/steps/auth-refresh%232/complete", json={"fence": 1}, headers=as_a),
        client.post("/api/steps/auth-refresh%231/claim", headers=as_b),
        client.post("/api/steps/auth-refresh%231/release", headers=as_b),
        client.post("/api/steps/auth-refresh%2Falert/drop"),
        client.post("/api/steps/auth-refresh%2Falert/reopen"),
    ):
        clock.advance(1)
        assert call.status_code < 300, call.text
    refused = client.post("/api/steps/auth-refresh%233/claim", headers=as_b)
    assert refused.status_code == 409  # blocked on rotate: recorded, by id
    path = tmp_path / "references.jsonl"
    write_file(export(runtime.store), path)
    recorded = path.read_text()
    assert "auth-refresh#" not in recorded and "auth-refresh/" not in recorded
    assert '"key":"bd-a1b2"' in recorded  # the key is kept on its StepAdded

    report = rerun(read_file(path))

    assert report.identical, report.describe()
    assert report.refused == 1
