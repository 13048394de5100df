"""Evidence on completion over HTTP: kept in the completion's event and shown in the step's
history and the timeline; refused out of bounds (422 naming the field, nothing written);
a plan that requires every check to pass refuses a failed one (409 naming it); a pasted
access key refused; and the Python client carrying it to a real server."""

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from planledger.api.client import connect
from planledger.api.http.app import create_app
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from planledger.ledger.domain.evidence import MAX_COMMITS, Check, Evidence
from tests.support import LOCAL
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import author, live_server, session

SHA = "9FCEB02D0AE598E95DC970B74767F19372D61AF8"
PR = "https://github.com/example/app/pull/31"
EVIDENCE: dict[str, Any] = {
    "commits": [SHA], "branch": "feature/limiter", "pr": PR,
    "checks": [{"name": "tests", "result": "pass", "command": "pytest -q",
                "summary": "383 passed"},
               {"name": "lint", "result": "fail", "summary": "2 findings"}]}
KEPT = {**EVIDENCE, "commits": [SHA.lower()],
        "checks": [EVIDENCE["checks"][0], {**EVIDENCE["checks"][1], "command": None}]}
ADMIN = "an-admin-token-long-enough-for-the-evidence-tests-0123"


@pytest.fixture
def client(clock: FakeClock) -> Iterator[TestClient]:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    yield TestClient(create_app(runtime, Settings(db="memory")), base_url=LOCAL)
    runtime.close()


def claimed_step(client: httpx.Client, strict: bool = False) -> tuple[str, dict[str, str]]:
    """A plan's one step, claimed by a new session: its id and that session's headers."""
    made = client.post("/api/plans", headers=author(client), json={
        "slug": "p", "title": "P", "steps": [{"title": "ship it"}],
        **({"require_checks_pass": True} if strict else {})})
    assert made.status_code == 201, made.text
    assert made.json()["require_checks_pass"] is strict
    step = made.json()["steps"][0]["step_id"]
    _, headers = session(client, "worker")
    assert client.post(f"/api/steps/{step}/claim", headers=headers).status_code == 200
    return step, headers


def test_a_completions_evidence_is_in_the_step_history_and_the_timeline(
    client: TestClient,
) -> None:
    step, headers = claimed_step(client)

    done = client.post(f"/api/steps/{step}/complete", headers=headers,
                       json={"fence": 1, "evidence": EVIDENCE})

    assert done.status_code == 200 and done.json()["status"] == "done", done.text
    history = client.get(f"/api/steps/{step}").json()["history"]
    completed = next(e for e in history if e["type"] == "StepCompleted")
    assert completed["data"] == {"fence": 1, "evidence": KEPT, "reason": None}
    entries = client.get("/api/timeline", params={"plan": "p"}).json()["entries"]
    entry = next(e for e in entries if e["kind"] == "completed")
    assert entry["evidence"] == KEPT
    assert entry["text"] == (f"completed step 1: 1 commit (9fceb02) on feature/limiter; {PR}; "
                             "checks: tests pass, lint fail")


def test_a_completion_without_evidence_reads_as_before(client: TestClient) -> None:
    step, headers = claimed_step(client)
    assert client.post(f"/api/steps/{step}/complete", headers=headers).status_code == 200

    history = client.get(f"/api/steps/{step}").json()["history"]
    assert next(e for e in history if e["type"] == "StepCompleted")["data"] == {
        "fence": 1, "evidence": None, "reason": None}  # (reason: a close with no claim)


@pytest.mark.parametrize(("evidence", "field"), [
    ({"commits": ["not-a-sha"]}, "evidence.commits[0]"),
    ({"commits": ["abcdef1"] * (MAX_COMMITS + 1)}, "evidence.commits"),
    ({"pr": "javascript:alert(document.cookie)"}, "evidence.pr"),
    ({"branch": "main..evil"}, "evidence.branch"),
    ({"checks": [{"name": "tests", "result": "maybe"}]}, "evidence.checks.0.result"),
    ({"checks": [{"name": "t", "result": "pass", "summary": "x" * 5_000}]},
     "evidence.checks[0].summary"),
    ({"checks": [{"name": "t", "result": "pass", "exit_code": 0}]}, "exit_code"),
    # What shows on a line of a timeline or of `planledger step`: no bidirectional control
    # to show it in another order than it is stored, no C1 control, no line separator.
    ({"branch": "feature/\u202eevil"}, "evidence.branch"),
    ({"branch": "main\u009b2J"}, "evidence.branch"),
    ({"branch": "main\u2028done"}, "evidence.branch"),
    ({"pr": "https://github.com/example/app/pull/31\u202e"}, "evidence.pr"),
    ({"pr": "https://github.com/\u2028x"}, "evidence.pr"),
    ({"checks": [{"name": "t", "result": "fail", "command": "x \u202essap"}]},
     "evidence.checks[0].command"),
    ({"checks": [{"name": "t", "result": "fail", "summary": "\u2067ssap"}]},
     "evidence.checks[0].summary"),
    # A change request's address with a user and password in it would keep them in an
    # append-only log forever.
    ({"pr": "https://user:hunter2@github.com/example/app/pull/31"}, "evidence.pr"),
    ({"pr": "https://oauth2@gitlab.example.com/app/-/merge_requests/3"}, "evidence.pr"),
])
def test_hostile_evidence_is_refused_naming_the_field_and_nothing_is_written(
    client: TestClient, evidence: dict[str, Any], field: str,
) -> None:
    step, headers = claimed_step(client)

    refused = client.post(f"/api/steps/{step}/complete", headers=headers,
                          json={"evidence": evidence})

    assert refused.status_code == 422, refused.text
    assert field in refused.text, refused.text
    assert client.get(f"/api/steps/{step}").json()["status"] == "in_progress"


def test_a_plan_that_requires_passing_checks_refuses_a_failed_one_naming_it(
    client: TestClient,
) -> None:
    step, headers = claimed_step(client, strict=True)
    assert client.get("/api/plans/p").json()["require_checks_pass"] is True

    refused = client.post(f"/api/steps/{step}/complete", headers=headers,
                          json={"evidence": EVIDENCE})

    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert (body["reason"], body["check"], body["step_id"]) == ("check_failed", "lint", step)
    assert body["message"].startswith('check "lint" failed: plan p requires every check')
    passing = {**EVIDENCE, "checks": EVIDENCE["checks"][:1]}
    done = client.post(f"/api/steps/{step}/complete", headers=headers,
                       json={"evidence": passing})
    assert done.status_code == 200, done.text


def test_an_access_key_pasted_into_a_checks_summary_is_refused(rt: Runtime) -> None:
    with live_server(rt, Settings(db=rt.db, admin_token=ADMIN)) as server:
        with server.client(ADMIN) as admin:
            key = admin.post("/api/keys", json={"name": "ci", "role": "planner"}).json()["key"]
        with server.client(key) as ci:
            step, headers = claimed_step(ci)
            pasted = ci.post(f"/api/steps/{step}/complete", headers=headers, json={
                "evidence": {"checks": [{"name": "deploy", "result": "pass",
                                         "summary": f"ran with PLANLEDGER_KEY={key}"}]}})
            assert pasted.status_code == 422, pasted.text
            assert "evidence.checks[0].summary" in pasted.text
            assert "an access key" in pasted.text and key not in pasted.text
            assert key not in ci.get("/api/log", params={"limit": 1000}).text


def test_the_python_client_carries_evidence_to_a_real_server(rt: Runtime) -> None:
    with live_server(rt) as server:
        with server.client() as http:
            made = http.post("/api/plans", headers=author(http), json={
                "slug": "q", "title": "Q", "steps": [{"title": "script it"}]})
            other = made.json()["steps"][0]["step_id"]
        with connect(server.url) as client:
            client.start_session("scripted")
            fence = client.claim(other).fence
            evidence = Evidence(commits=(SHA,), pr=PR, checks=(Check("tests", "pass"),))
            done = client.complete(other, fence, "all green", evidence)
            assert done.status == "done"
            completed = [e for e in client.step(other).history if e.type == "StepCompleted"]
        assert completed[0].data["evidence"] == {
            "commits": [SHA.lower()], "branch": None, "pr": PR,
            "checks": [{"name": "tests", "result": "pass", "command": None, "summary": None}]}
