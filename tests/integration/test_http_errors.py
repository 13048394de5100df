"""Every refusal is a clear answer: 409 naming who or what is in the way, 404 for unknown
ids, 422 for bad input, and no input at all makes the server answer 500."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from tests.support import LOCAL
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import session
from tests.support.seed import seed_auth_refresh


@pytest.fixture
def runtime(tmp_path: Path, clock: FakeClock) -> Iterator[Runtime]:
    rt = open_runtime(str(tmp_path / "ledger.sqlite"), clock=clock, ids=SequentialIds())
    yield rt
    rt.close()


@pytest.fixture
def steps(runtime: Runtime) -> list[str]:
    return list(seed_auth_refresh(runtime.ledger, race=False))


@pytest.fixture
def client(runtime: Runtime) -> TestClient:
    # raise_server_exceptions: a 500 would fail the test loudly, not hide in a status
    return TestClient(create_app(runtime, Settings(db=runtime.db)), base_url=LOCAL)


def test_a_stale_fence_is_refused_naming_both_fences(
    client: TestClient, steps: list[str], clock: FakeClock,
) -> None:
    _, as_a = session(client, "agent A")
    b_id, as_b = session(client, "agent B")
    client.post(f"/api/steps/{steps[4]}/claim", headers=as_a, json={"lease_seconds": 60})
    clock.advance(61)  # A's lease lapses; B takes the step over
    taken = client.post(f"/api/steps/{steps[4]}/claim", headers=as_b).json()
    assert taken["fence"] == 2 and taken["took_over_from"]
    stale = client.post(f"/api/steps/{steps[4]}/complete", headers=as_a, json={"fence": 1})
    assert stale.status_code == 409
    body = stale.json()
    assert (body["reason"], body["fence"], body["current_fence"], body["holder"]) == (
        "stale_fence", 1, 2, b_id)
    assert "fence 2" in body["message"] and "fence 1" in body["message"]


def test_a_blocked_claim_names_its_blockers(client: TestClient, steps: list[str]) -> None:
    _, as_a = session(client, "agent A")
    refused = client.post(f"/api/steps/{steps[5]}/claim", headers=as_a)
    assert refused.status_code == 409
    body = refused.json()
    assert body["reason"] == "blocked"
    assert [b["step_id"] for b in body["blockers"]] == [steps[4]]
    assert body["blockers"][0]["status"] == "open"


def test_a_claim_on_a_done_step_is_closed(client: TestClient, steps: list[str]) -> None:
    _, as_a = session(client, "agent A")
    refused = client.post(f"/api/steps/{steps[0]}/claim", headers=as_a)
    assert refused.status_code == 409
    assert (refused.json()["reason"], refused.json()["status"]) == ("closed", "done")


def test_an_ended_session_cannot_claim(client: TestClient, steps: list[str]) -> None:
    a_id, as_a = session(client, "agent A")
    client.post(f"/api/sessions/{a_id}/end", headers=as_a)
    refused = client.post(f"/api/steps/{steps[4]}/claim", headers=as_a)
    assert refused.status_code == 409 and refused.json()["reason"] == "session_ended"


@pytest.mark.parametrize(("path", "reason"), [
    ("/api/steps/01ZZZZZZZZZZZZZZZZZZZZZZZZ", "unknown_step"),
    ("/api/plans/no-such-plan", "unknown_plan"),
    ("/api/plans/no-such-plan/ready", "unknown_plan"),
    ("/api/sessions/01ZZZZZZZZZZZZZZZZZZZZZZZZ", "unknown_session"),
    ("/api/nothing-here", "not_found"),
])
def test_unknown_ids_are_404_naming_what_is_unknown(
    client: TestClient, steps: list[str], path: str, reason: str,
) -> None:
    answer = client.get(path)
    assert answer.status_code == 404 and answer.json()["reason"] == reason


def test_recording_a_ready_listing_needs_a_session_and_a_known_plan(
    client: TestClient, steps: list[str],
) -> None:
    _, as_a = session(client, "agent A")
    anonymous = client.post("/api/plans/auth-refresh/ready")
    assert anonymous.status_code == 401 and anonymous.json()["reason"] == "unauthorized"
    unknown = client.post("/api/plans/no-such-plan/ready", headers=as_a)
    assert unknown.status_code == 404 and unknown.json()["reason"] == "unknown_plan"


def test_a_timeline_page_outside_its_bounds_is_422(client: TestClient, steps: list[str]) -> None:
    for params in ({"limit": 0}, {"after": -1}, {"limit": "many"}):
        answer = client.get("/api/timeline", params=params)
        assert answer.status_code == 422 and answer.json()["reason"] == "invalid_input"


def test_bad_input_is_422_with_a_readable_message(client: TestClient, steps: list[str]) -> None:
    _, as_a = session(client, "agent A")
    answer = client.post(f"/api/steps/{steps[4]}/claim", headers=as_a,
                         json={"lease_seconds": "soon"})
    assert answer.status_code == 422
    assert answer.json()["message"].startswith("invalid input: body.lease_seconds:")
    cycle = client.post(f"/api/steps/{steps[0]}/dependencies", headers=as_a,
                        json={"depends_on": [steps[5]]})
    assert cycle.status_code == 422 and cycle.json()["reason"] == "dependency_cycle"
    assert "auth-refresh#1 -> " in cycle.json()["message"]  # named by reference


NASTY_TEXT = ["", " ", "\x00", "a" * 100_000, "😀" * 500, "../../etc/passwd", "%00", "\u202e"]
NASTY_JSON: list[Any] = [None, [], {}, 1, "x", {"title": None}, {"depends_on": "x"},
                         {"slug": "x", "title": "t", "steps": [{"title": "a",
                                                                "depends_on": ["a"]}]},
                         {"lease_seconds": 10**40}, {"lease_seconds": -1}, {"fence": 10**40},
                         {"slug": "ok-slug", "title": "t", "constraints": {"BAD NAME": "x"}}]


def test_odd_strings_never_make_a_500(client: TestClient, steps: list[str]) -> None:
    _, as_a = session(client, "agent A")
    for text in NASTY_TEXT:
        _odd_strings(client, steps, as_a, text)


def _odd_strings(client: TestClient, steps: list[str], as_a: dict[str, str], text: str,
                 ) -> None:
    in_url = quote(text[:200], safe="")  # what a client can put in a path or a header
    answers = [
        client.post("/api/sessions", json={"name": text}),
        client.post("/api/plans", headers=as_a, json={"slug": text, "title": text}),
        client.post("/api/plans/auth-refresh/steps", headers=as_a,
                    json={"title": text, "body": text}),
        client.post("/api/plans/auth-refresh/steps", headers=as_a,
                    json={"title": "t", "depends_on": [text]}),
        client.patch(f"/api/steps/{steps[4]}", headers=as_a, json={"title": text}),
        client.post(f"/api/steps/{steps[4]}/claim", headers={**as_a, "Idempotency-Key": in_url}),
        client.post(f"/api/steps/{steps[4]}/claim",
                    headers={"Authorization": f"Bearer {in_url}.{in_url}"}),
        client.get(f"/api/steps/{in_url}"),
        client.get(f"/api/plans/{in_url}/ready"),
    ]
    assert all(a.status_code < 500 for a in answers), [a.text[:200] for a in answers]
    assert all("reason" in a.json() for a in answers if a.status_code >= 400)


def test_odd_bodies_never_make_a_500(client: TestClient, steps: list[str]) -> None:
    _, as_a = session(client, "agent A")
    routes = ["/api/plans", "/api/plans/auth-refresh/steps", f"/api/steps/{steps[4]}/claim",
              f"/api/steps/{steps[4]}/complete", "/api/plans/auth-refresh/claim-next",
              f"/api/steps/{steps[4]}/dependencies"]
    for payload in NASTY_JSON:
        for route in routes:
            answer = client.post(route, json=payload, headers=as_a)
            assert answer.status_code < 500, (route, payload, answer.text[:200])
    raw = client.post("/api/plans", content=b"{not json", headers={
        **as_a, "Content-Type": "application/json"})
    assert raw.status_code == 422
    huge = client.get("/api/log", params={"after": 10**30})
    assert huge.status_code == 422
    naive = client.get("/api/timeline", params={"since": "2026-11-29T10:00:00"})
    assert naive.status_code == 422
    assert client.get("/api/timeline", params={"plan": "no-such-plan"}).status_code == 404
