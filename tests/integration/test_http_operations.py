"""What operators and client authors read: /healthz, /metrics and /openapi.json."""

import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import open_runtime
from planledger.api.settings import Settings
from tests.support import LOCAL
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import session
from tests.support.seed import seed_auth_refresh


@pytest.fixture
def client(clock: FakeClock) -> TestClient:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    return TestClient(create_app(runtime, Settings(db="memory")), base_url=LOCAL)


def test_healthz_answers_with_the_store_and_log_position(client: TestClient) -> None:
    session(client, "agent A")
    health = client.get("/healthz").json()
    assert health == {"status": "ok", "store": "memory", "position": 1}


def test_metrics_count_claims_bounces_lapses_releases_completions_and_latency(
    client: TestClient, clock: FakeClock,
) -> None:
    runtime = client.app.state.service.runtime  # type: ignore[attr-defined]
    steps = seed_auth_refresh(runtime.ledger)
    a_id, as_a = session(client, "agent A")
    _, as_b = session(client, "agent B")
    client.post(f"/api/steps/{steps[4]}/claim", headers=as_a, json={"lease_seconds": 10})
    client.post(f"/api/steps/{steps[4]}/claim", headers=as_b)
    clock.advance(11)
    client.post(f"/api/steps/{steps[4]}/claim", headers=as_b)
    client.post(f"/api/steps/{steps[4]}/complete", headers=as_b)
    client.post(f"/api/steps/{steps[5]}/claim", headers=as_a)
    client.post(f"/api/sessions/{a_id}/end", headers=as_a)
    text = client.get("/metrics").text
    for line in ['planledger_claims_total{renewed="false"} 3.0',
                 'planledger_bounces_total{reason="already_claimed"} 1.0',
                 "planledger_lapses_total 1.0",
                 'planledger_releases_total{reason="session_ended"} 1.0',
                 "planledger_completions_total 1.0",
                 'planledger_request_seconds_count{method="POST",'
                 'route="/api/steps/{step_id}/claim",status="409"} 1.0']:
        assert line in text, line


FIRST_USE = """
import sys
from fastapi.testclient import TestClient
from planledger.api.http.app import create_app
from planledger.api.runtime import open_runtime
from planledger.api.settings import Settings
runtime = open_runtime(sys.argv[1])
client = TestClient(create_app(runtime, Settings(db=runtime.db)), base_url="http://127.0.0.1")
token = {"Authorization": "Bearer " + client.post("/api/sessions", json={}).json()["token"]}
client.post("/api/plans", headers=token, json={"slug": "first", "title": "First",
                                               "steps": [{"title": "one"}]})
client.post("/api/plans/first/claim-next", headers=token, json={"wait_seconds": 0})
client.post("/api/reservations/check", headers=token, json={"paths": ["a"]})
client.get("/openapi.json")
print("done")
"""


def test_the_openapi_document_and_first_bodies_are_built_without_a_warning(
    tmp_path: Path,
) -> None:
    # A warning here prints on the server's stderr the first time someone opens /docs or
    # sends a body (the bodies go first: building the document builds their models).
    # A model is built once a process, so this runs in a fresh one.
    run = subprocess.run([sys.executable, "-c", FIRST_USE,
                          str(tmp_path / "ledger.sqlite")], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.stdout.strip() == "done", run.stderr[-3000:]
    assert "Warning" not in run.stderr, run.stderr[-3000:]


def test_openapi_documents_every_route_its_errors_and_examples(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            assert operation.get("description"), f"{method} {path} has no description"
            if path.startswith("/api"):
                failures = [c for c in operation["responses"] if int(c) >= 400]
                assert "503" in failures, f"{method} {path} documents no errors"
                assert operation.get("parameters") is None or "422" in failures
    claim = spec["paths"]["/api/steps/{step_id}/claim"]["post"]
    assert {"401", "404", "409", "422"} <= set(claim["responses"])
    assert "held by" in claim["responses"]["409"]["description"]
    error = spec["components"]["schemas"]["ErrorOut"]
    assert "task already claimed" in error["properties"]["message"]["examples"][0]
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_invented_http_methods_share_one_metrics_label(client: TestClient) -> None:
    # each invented method once grew /metrics by a series of its own, without bound
    for n in range(50):
        client.request(f"M{n}X", "/healthz")
    text = client.get("/metrics").text
    assert 'method="other",route="/healthz",status="405"} 50.0' in text
    assert "M7X" not in text
