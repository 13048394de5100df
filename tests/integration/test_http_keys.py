"""Access keys over a real socket: once one key is live every request needs a credential,
reads included; a session takes its key's role; a revoked key stops its sessions at once;
and the origin guard refuses foreign hosts and cross-site pages before any route runs."""

from collections.abc import Iterator

import httpx
import pytest

from planledger.api.runtime import Runtime
from planledger.api.settings import Settings
from planledger.ledger import commands as c
from tests.support import OPERATOR
from tests.support.live_server import LiveServer, live_server

ADMIN_TOKEN = "a-long-enough-admin-token-for-the-tests-0123456789"


@pytest.fixture
def server(rt: Runtime) -> Iterator[LiveServer]:
    with live_server(rt, Settings(db=rt.db, admin_token=ADMIN_TOKEN)) as served:
        yield served


def issue(server: LiveServer, name: str, role: str) -> str:
    with server.client(ADMIN_TOKEN) as admin:
        made = admin.post("/api/keys", json={"name": name, "role": role})
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["key"].startswith("plk_") and body["role"] == role and body["live"]
    return str(body["key"])


def start(client: httpx.Client, name: str) -> tuple[str, dict[str, str]]:
    started = client.post("/api/sessions", json={"name": name})
    assert started.status_code == 201, started.text
    return started.json()["session_id"], {"Authorization": f"Bearer {started.json()['token']}"}


def test_without_keys_everything_stays_open(server: LiveServer) -> None:
    with server.client() as anyone:
        assert anyone.get("/api/plans").status_code == 200
        assert anyone.post("/api/sessions", json={"name": "a"}).json()["role"] == "planner"


def test_once_a_key_is_live_every_request_needs_a_credential(server: LiveServer) -> None:
    reader = issue(server, "dash", "reader")
    with server.client() as anyone:
        for method, path in (("GET", "/api/plans"), ("GET", "/api/log"), ("GET", "/metrics"),
                             ("POST", "/api/sessions"), ("GET", "/api/console")):
            refused = anyone.request(method, path)
            assert refused.status_code == 401, (path, refused.text)
            assert refused.json()["reason"] == "unauthorized"
        assert anyone.get("/healthz").status_code == 200
        assert anyone.get("/api/plans", headers={"Authorization": "Bearer plk_guessed"}
                          ).status_code == 401
    with server.client(reader) as dashboard:
        assert dashboard.get("/api/plans").status_code == 200
        assert dashboard.get("/api/log").status_code == 200
        refused = dashboard.post("/api/sessions", json={"name": "x"})
        assert refused.status_code == 403
        assert (refused.json()["reason"], refused.json()["needs"]) == ("forbidden", "worker")


def test_a_session_takes_its_keys_role_and_the_log_names_the_key(server: LiveServer) -> None:
    planner_key, worker_key = issue(server, "lead", "planner"), issue(server, "bot", "worker")
    with server.client(planner_key) as lead:
        made = lead.post("/api/plans", json={"slug": "p", "title": "P",
                                             "steps": [{"title": "a"}, {"title": "b"}]})
        assert made.status_code == 201, made.text
    with server.client(worker_key) as bot:
        session_id, as_bot = start(bot, "bot 1")
        shown = bot.get(f"/api/sessions/{session_id}").json()
        assert (shown["role"], shown["key"]) == ("worker", "bot")
        refused = bot.post("/api/plans", json={"slug": "q", "title": "Q"}, headers=as_bot)
        assert refused.status_code == 403 and refused.json()["needs"] == "planner"
        ready = bot.get("/api/plans/p/ready").json()["ready"]
        claimed = bot.post(f"/api/steps/{ready[0]['step_id']}/claim", headers=as_bot)
        assert claimed.status_code == 200, claimed.text
        log = bot.get("/api/log", params={"limit": 1000}).json()["events"]
    by_bot = [e for e in log if e["session_id"] == session_id]
    assert {e["type"] for e in by_bot} >= {"SessionStarted", "StepClaimed"}
    assert all(e["key"] == "bot" for e in by_bot)
    plan_made = next(e for e in log if e["type"] == "PlanCreated")
    assert (plan_made["actor"], plan_made["key"]) == ("key:lead", "lead")


def test_a_revoked_key_and_its_sessions_stop_at_once(server: LiveServer) -> None:
    worker_key = issue(server, "bot", "worker")
    with server.client(worker_key) as bot:
        _, as_bot = start(bot, "bot 1")
        with server.client(ADMIN_TOKEN) as admin:
            assert admin.post("/api/keys/bot/revoke").json()["live"] is False
            listed = admin.get("/api/keys").json()["keys"]
        assert [(k["name"], k["live"]) for k in listed] == [("bot", False)]
        assert "key" not in listed[0] and "digest" not in listed[0]
        assert bot.get("/api/plans").status_code == 401
        ended = bot.post("/api/sessions/x/end", headers=as_bot)
        assert ended.status_code == 401 and "revoked" in ended.json()["message"]


def test_only_an_admin_manages_keys(server: LiveServer) -> None:
    planner_key = issue(server, "lead", "planner")
    with server.client(planner_key) as lead:
        refused = lead.post("/api/keys", json={"name": "mine", "role": "admin"})
        assert refused.status_code == 403 and refused.json()["needs"] == "admin"
        assert lead.get("/api/keys").status_code == 403
    with server.client(ADMIN_TOKEN) as admin:
        again = admin.post("/api/keys", json={"name": "lead", "role": "reader"})
        assert again.status_code == 409 and again.json()["reason"] == "key_exists"
        odd = admin.post("/api/keys", json={"name": "lead", "role": "owner"})
        assert odd.status_code == 422


def test_the_store_keeps_only_a_digest_of_a_key(server: LiveServer) -> None:
    key = issue(server, "bot", "worker")
    with server.client(key) as bot:
        log = bot.get("/api/log", params={"limit": 1000}).text
    assert key not in log and key.removeprefix("plk_") not in log


@pytest.mark.parametrize(("headers", "reason"), [
    ({"Host": "rebind.test:8765"}, "forbidden_host"),
    ({"Host": "localhost", "Origin": "http://rebind.test:8765"}, "forbidden_origin"),
    ({"Host": "127.0.0.1:8765", "Origin": "http://localhost:3000"}, "forbidden_origin"),
    ({"Host": "127.0.0.1:8765", "Origin": "null"}, "forbidden_origin"),
])
def test_foreign_hosts_and_origins_are_refused_on_every_route(
        server: LiveServer, headers: dict[str, str], reason: str) -> None:
    with server.client() as page:
        for method, path in (("POST", "/api/sessions"), ("GET", "/api/log"), ("GET", "/"),
                             ("POST", "/mcp"), ("GET", "/healthz")):
            refused = page.request(method, path, headers=headers)
            assert refused.status_code == 403, (path, refused.text)
            assert refused.json()["reason"] == reason
    assert server.runtime.reads.sessions == {}


def test_the_servers_own_origin_passes(server: LiveServer) -> None:
    own = server.url
    with server.client() as page:
        started = page.post("/api/sessions", json={"name": "console"}, headers={"Origin": own})
    assert started.status_code == 201


def test_a_worker_key_authors_no_plan_but_a_planner_key_does(rt: Runtime) -> None:
    from planledger.api.access import new_key
    from planledger.ledger.domain.access import digest_of

    worker_key = new_key()
    rt.ledger.execute(c.IssueKey("bot", "worker", digest_of(worker_key), OPERATOR))
    with live_server(rt) as server, server.client(worker_key) as bot:
        refused = bot.post("/api/plans", json={"slug": "p", "title": "P"})
    assert refused.status_code == 403 and refused.json()["needs"] == "planner"
