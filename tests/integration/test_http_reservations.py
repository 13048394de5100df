"""Path reservations over HTTP: steps declare paths, claims reserve them (and more), a
colliding claim is 409 paths_reserved naming holder, step and patterns, ready puts the
steps that would not collide first, and /api/reservations answers who holds what."""

from typing import Any

import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import open_runtime
from planledger.api.settings import Settings
from tests.support import LOCAL
from tests.support.fakes import FakeClock, SequentialIds

PLAN = {"slug": "auth", "title": "Auth", "steps": [
    {"key": "rotate", "title": "Rotate refresh tokens", "paths": ["internal/auth/**"]},
    {"key": "limit", "title": "Rate-limit refresh", "paths": [
        "internal/auth/limit.go", {"pattern": "docs/", "mode": "shared"}]},
    {"key": "docs", "title": "Document it", "paths": [{"pattern": "docs/", "mode": "shared"}]},
]}


def session(client: TestClient, name: str) -> tuple[str, dict[str, str]]:
    started = client.post("/api/sessions", json={"name": name}).json()
    return started["session_id"], {"Authorization": f"Bearer {started['token']}"}


@pytest.fixture
def client(clock: FakeClock) -> TestClient:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    return TestClient(create_app(runtime, Settings(db="memory")), base_url=LOCAL)


def _plan(client: TestClient, headers: dict[str, str]) -> dict[str, str]:
    made = client.post("/api/plans", json=PLAN, headers=headers)
    assert made.status_code == 201, made.text
    steps = made.json()["steps"]
    assert steps[1]["paths"] == [{"pattern": "internal/auth/limit.go", "mode": "exclusive"},
                                 {"pattern": "docs/**", "mode": "shared"}]
    return {s["key"]: s["step_id"] for s in steps}


def _b_holds_rotate(client: TestClient) -> tuple[dict[str, str], dict[str, str], str,
                                                  dict[str, str]]:
    """A's plan, with B holding `rotate` (and so internal/auth/**): steps, A's headers,
    B's session and B's headers."""
    _, as_a = session(client, "agent A")
    b, as_b = session(client, "agent B")
    steps = _plan(client, as_a)
    held = client.post(f"/api/steps/{steps['rotate']}/claim", headers=as_b)
    assert held.status_code == 200, held.text
    return steps, as_a, b, as_b


def test_a_claim_on_reserved_paths_is_409_naming_holder_step_and_patterns(
    client: TestClient,
) -> None:
    a, as_a = session(client, "agent A")
    b, as_b = session(client, "agent B")
    steps = _plan(client, as_a)
    held = client.post(f"/api/steps/{steps['rotate']}/claim", headers=as_b,
                       json={"paths": ["go.mod"]})
    assert held.status_code == 200, held.text
    assert [p["pattern"] for p in held.json()["paths"]] == ["internal/auth/**", "go.mod"]

    refused = client.post(f"/api/steps/{steps['limit']}/claim", headers=as_a)

    assert refused.status_code == 409
    body = refused.json()
    assert (body["reason"], body["holder"], body["holder_name"], body["holder_step"],
            body["patterns"]) == ("paths_reserved", b, "agent B", steps["rotate"],
                                  ["internal/auth/**"])
    assert body["message"] == (f'paths reserved: "internal/auth/**" held by "{b}" (agent B, '
                               'step auth#1 "Rotate refresh tokens")')
    history = client.get(f"/api/steps/{steps['limit']}").json()["history"]
    assert history[-1]["type"] == "PathsBounced"
    assert a


def test_ready_puts_colliding_steps_last_and_names_what_they_would_meet(
    client: TestClient,
) -> None:
    steps, as_a, b, _ = _b_holds_rotate(client)

    ready = client.get("/api/plans/auth/ready").json()

    assert [s["step_id"] for s in ready["ready"]] == [steps["docs"], steps["limit"]]
    docs, limit = ready["ready"]
    assert docs["collides_with"] == []
    assert limit["collides_with"] == [{"holder": b, "holder_name": "agent B",
                                       "step_id": steps["rotate"], "ref": "auth#1",
                                       "title": "Rotate refresh tokens",
                                       "patterns": ["internal/auth/**"]}]
    (rotate,) = ready["held"]
    assert rotate["reserved"] == [{"pattern": "internal/auth/**", "mode": "exclusive"}]
    next_one = client.post("/api/plans/auth/claim-next", headers=as_a).json()
    assert next_one["claimed"]["step_id"] == steps["docs"]  # limit is passed by


def test_a_sessions_own_reservations_are_no_collision_in_the_ready_list_it_is_shown(
    client: TestClient,
) -> None:
    steps, as_a, b, as_b = _b_holds_rotate(client)

    for_b = client.post("/api/plans/auth/ready", headers=as_b).json()
    for_a = client.post("/api/plans/auth/ready", headers=as_a).json()

    # B holds internal/auth/**: its own claim of limit would not bounce, A's would.
    assert [s["step_id"] for s in for_b["ready"]] == [steps["limit"], steps["docs"]]
    assert [s["collides_with"] for s in for_b["ready"]] == [[], []]
    assert [s["step_id"] for s in for_a["ready"]] == [steps["docs"], steps["limit"]]
    assert for_a["ready"][1]["collides_with"][0]["holder"] == b
    claimed = client.post(f"/api/steps/{steps['limit']}/claim", headers=as_b)
    assert claimed.status_code == 200, claimed.text

def _check(client: TestClient, **asked: Any) -> list[dict[str, Any]]:
    answer = client.post("/api/reservations/check", json=asked)
    assert answer.status_code == 200, answer.text
    found: list[dict[str, Any]] = answer.json()["reserved"]
    return found


def test_reservations_answer_who_holds_what_until_the_claim_ends(client: TestClient) -> None:
    steps, as_a, b, as_b = _b_holds_rotate(client)
    client.post(f"/api/steps/{steps['docs']}/claim", headers=as_a)

    everything = client.get("/api/reservations").json()["reserved"]
    assert [r["step_id"] for r in everything] == [steps["rotate"], steps["docs"]]
    asked = client.get("/api/reservations", params={"paths": ["internal/*/x.go"]}).json()
    assert [(r["holder"], r["patterns"]) for r in asked["reserved"]] == [
        (b, ["internal/auth/**"])]
    assert "held by" in asked["message"]
    assert [r["step_id"] for r in _check(client, files=["docs/a.md", "README.md"])] == [
        steps["docs"]]
    assert _check(client, files=["docs/a.md"], exclusive_only=True) == []
    assert _check(client, files=["internal/auth/x.go"], but=b) == []

    client.post(f"/api/steps/{steps['rotate']}/complete", headers=as_b)
    assert _check(client, files=["internal/auth/x.go"]) == []


def test_paths_are_revised_and_bad_ones_refused_naming_the_field(client: TestClient) -> None:
    _, as_a = session(client, "agent A")
    steps = _plan(client, as_a)
    revised = client.patch(f"/api/steps/{steps['docs']}", headers=as_a,
                           json={"paths": ["README.md"]})
    assert revised.json()["paths"] == [{"pattern": "README.md", "mode": "exclusive"}]
    bad = client.post("/api/plans/auth/steps", headers=as_a,
                      json={"title": "t", "paths": ["../outside"]})
    assert (bad.status_code, bad.json()["reason"], bad.json()["field"]) == (
        422, "invalid_input", "paths")
    assert client.get("/api/reservations", params={"paths": ["/abs"]}).status_code == 422


def test_the_console_shows_reservations_on_steps_and_on_the_holders_card(
    client: TestClient,
) -> None:
    _, as_a = session(client, "agent A")
    b, as_b = session(client, "agent B")
    steps = _plan(client, as_a)
    client.post(f"/api/steps/{steps['rotate']}/claim", headers=as_b,
                json={"paths": [{"pattern": "go.sum", "mode": "shared"}]})

    console = client.get("/api/console").json()
    (card,) = [s for s in console["sessions"] if s["session_id"] == b]
    assert card["holds"][0]["paths"] == [{"pattern": "internal/auth/**", "mode": "exclusive"},
                                         {"pattern": "go.sum", "mode": "shared"}]
    shown = {s["step_id"]: s for s in client.get(
        "/api/console/steps", params={"plan": "auth"}).json()["steps"]}
    assert shown[steps["rotate"]]["reserved"][0]["pattern"] == "internal/auth/**"
    assert shown[steps["limit"]]["collides_with"][0]["holder"] == b
    assert [e["type"] for e in client.get(f"/api/steps/{steps['rotate']}").json()["history"]
            ][-2:] == ["StepClaimed", "PathsReserved"]


def test_a_heartbeat_and_a_re_claim_answer_the_paths_the_claim_still_holds(
    client: TestClient,
) -> None:
    """MCP Agent Mail's lifecycle tests read a renewal's paths: they are what is held."""
    steps, _, _, as_b = _b_holds_rotate(client)
    claim = f"/api/steps/{steps['rotate']}/claim"
    added = client.post(claim, headers=as_b, json={"paths": ["go.mod"]})
    assert added.status_code == 200, added.text
    held = added.json()["paths"]
    assert {p["pattern"] for p in held} == {"internal/auth/**", "go.mod"}

    beat = client.post(f"/api/steps/{steps['rotate']}/heartbeat", headers=as_b)
    again = client.post(claim, headers=as_b)

    assert beat.status_code == 200 and beat.json()["renewed"] is True, beat.text
    assert beat.json()["paths"] == held
    assert again.json()["paths"] == held


WHOLE = "reserves the whole repository: while a claim holds it, every claim whose paths meet"


def test_paths_covering_the_whole_repository_are_warned_of_and_others_answer_as_ever(
    client: TestClient,
) -> None:
    """MCP Agent Mail flags `*`, `**` and `**/*`: the write goes through, the answer warns."""
    _, as_a = session(client, "agent A")
    made = client.post("/api/plans", headers=as_a, json={"slug": "wide", "title": "Wide",
                                                         "steps": [
        {"title": "Everything", "paths": ["./**/"]}, {"title": "Docs", "paths": ["docs/"]}]})
    assert made.status_code == 201, made.text
    assert made.json()["warnings"] == [f'step wide#1: "**" {WHOLE} it bounces; name the '
                                       "directories the step touches instead"]
    everything, docs = made.json()["steps"]
    assert "warnings" not in docs and everything["warnings"][0].startswith(f'"**" {WHOLE}')

    added = client.post("/api/plans/wide/steps", headers=as_a,
                        json={"title": "Any file", "paths": ["**/*"]})
    assert added.status_code == 201 and added.json()["warnings"][0].startswith('"**/*" ')
    claimed = client.post(f"/api/steps/{docs['step_id']}/claim", headers=as_a,
                          json={"paths": ["*"]})
    assert claimed.status_code == 200, claimed.text
    assert claimed.json()["warnings"][0].startswith('"*" reserves every file and directory')

    steps, _, _, as_b = _b_holds_rotate(client)
    plain = client.post(f"/api/steps/{steps['rotate']}/heartbeat", headers=as_b).json()
    assert "warnings" not in plain and "warnings" not in _plan_answer(client, as_a)


def _plan_answer(client: TestClient, headers: dict[str, str]) -> dict[str, Any]:
    made = client.post("/api/plans", headers=headers, json={**PLAN, "slug": "auth-2"})
    assert made.status_code == 201, made.text
    answer: dict[str, Any] = made.json()
    return answer


def test_a_holder_re_reserving_its_exclusive_pattern_as_shared_shares_it(
    client: TestClient,
) -> None:
    steps, _, _, as_b = _b_holds_rotate(client)
    shared = {"pattern": "internal/auth/**", "mode": "shared"}
    renewed = client.post(f"/api/steps/{steps['rotate']}/claim", headers=as_b,
                          json={"paths": [shared]})
    assert renewed.status_code == 200 and renewed.json()["paths"] == [shared], renewed.text
    held = client.get("/api/reservations").json()
    assert [r["paths"] for r in held["reserved"]] == [[shared]]
