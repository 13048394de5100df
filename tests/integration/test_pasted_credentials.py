"""A credential pasted into text that every reader sees is refused, over a real socket:
the server knows its own session tokens, access keys and admin token, and a note, a body
or a constraint that holds one is refused (422, naming the field) before anything is
written, so `/api/log` never serves it. A string merely shaped like a token is no
credential of this server's and passes."""

from collections.abc import Iterator

import httpx
import pytest

from planledger.api.runtime import Runtime
from planledger.api.settings import Settings
from tests.support.live_server import LiveServer, live_server

ADMIN_TOKEN = "an-admin-token-long-enough-for-the-pasted-tests-0123"
FAKE_TOKEN = "01ARZ3NDEKTSV4RRFFQ69G5FAV." + "A" * 43  # a token's shape, signed by nobody


@pytest.fixture
def server(rt: Runtime) -> Iterator[LiveServer]:
    with live_server(rt, Settings(db=rt.db, admin_token=ADMIN_TOKEN)) as served:
        yield served


def started(client: httpx.Client) -> tuple[str, dict[str, str]]:
    made = client.post("/api/sessions", json={"name": "paster"})
    assert made.status_code == 201, made.text
    token = made.json()["token"]
    return token, {"Authorization": f"Bearer {token}"}


def one_step(client: httpx.Client, headers: dict[str, str]) -> str:
    made = client.post("/api/plans", headers=headers,
                       json={"slug": "p", "title": "P", "steps": [{"title": "a"}]})
    assert made.status_code == 201, made.text
    return str(client.get("/api/plans/p/ready").json()["ready"][0]["step_id"])


def logged_text(client: httpx.Client) -> str:
    return client.get("/api/log", params={"limit": 1000}).text


def refused_naming(answer: httpx.Response, field: str, kind: str) -> None:
    assert answer.status_code == 422, answer.text
    assert field in answer.text and kind in answer.text, answer.text


def test_a_session_token_pasted_into_a_note_is_refused_and_never_logged(
        server: LiveServer) -> None:
    with server.client() as agent:
        token, headers = started(agent)
        step_id = one_step(agent, headers)
        pasted = agent.post(f"/api/steps/{step_id}/notes", headers=headers,
                            json={"text": f"to resume, use Authorization: Bearer {token}"})
        refused_naming(pasted, "text", "a session token")
        assert token not in pasted.text
        assert token not in logged_text(agent)


def test_an_access_key_in_a_step_body_is_refused(server: LiveServer) -> None:
    with server.client(ADMIN_TOKEN) as admin:
        key = admin.post("/api/keys", json={"name": "lead", "role": "planner"}).json()["key"]
    with server.client(key) as lead:
        _, headers = started(lead)
        one_step(lead, headers)
        pasted = lead.post("/api/plans/p/steps", headers=headers,
                           json={"title": "deploy", "body": f"export PLANLEDGER_KEY={key}"})
        refused_naming(pasted, "body", "an access key")
        assert key not in logged_text(lead)


def test_the_admin_token_in_a_plan_constraint_is_refused(server: LiveServer) -> None:
    with server.client() as agent:
        _, headers = started(agent)
        pasted = agent.post("/api/plans", headers=headers, json={
            "slug": "q", "title": "Q", "constraints": {"ops": f"force-release with {ADMIN_TOKEN}"}})
        refused_naming(pasted, "constraints", "the admin token")
        assert agent.get("/api/plans/q").status_code == 404
        assert ADMIN_TOKEN not in logged_text(agent)


def test_text_merely_shaped_like_a_token_is_kept(server: LiveServer) -> None:
    with server.client() as agent:
        _, headers = started(agent)
        step_id = one_step(agent, headers)
        kept = agent.post(f"/api/steps/{step_id}/notes", headers=headers,
                          json={"text": f"the docs' example token is {FAKE_TOKEN}"})
        assert kept.status_code == 201, kept.text
        assert FAKE_TOKEN in logged_text(agent)
