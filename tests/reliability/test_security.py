"""No stranger's hand: a session's claims cannot be heartbeated, completed, released or its
session ended with another session's token or with none; only the admin token force-
releases; tokens never reach the server's log, the event log or an exported recording; and
the defaults are safe for a laptop (bound to 127.0.0.1, console read-only, CORS closed)."""

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from planledger.api.settings import DEFAULT_HOST, load_settings
from tests.reliability.conftest import ADMIN, Served

PLANLEDGER = str(Path(sys.executable).parent / "planledger")
ACTIONS = ("heartbeat", "complete", "release", "drop")


@pytest.fixture
def held(served: Served) -> tuple[str, str, httpx.Client]:
    """A step held by a session: (step, holder's session id, holder's client)."""
    (step,) = served.plan(_fresh_slug(), 1)
    holder, client = served.session("holder")
    assert client.post(f"/api/steps/{step}/claim", json={"lease_seconds": 600}).status_code == 200
    return step, holder, client


_slugs = iter(range(10**6))


def _fresh_slug() -> str:
    return f"security-{next(_slugs)}"


def test_another_sessions_token_or_none_cannot_touch_a_claim(
    served: Served, held: tuple[str, str, httpx.Client],
) -> None:
    step, holder, _ = held
    _, stranger = served.session("stranger")
    anonymous = httpx.Client(base_url=served.url, timeout=30)
    forged = httpx.Client(base_url=served.url, timeout=30,
                          headers={"Authorization": f"Bearer {holder}.forged-signature"})
    for action in ACTIONS:
        path = f"/api/steps/{step}/{action}"
        refused = stranger.post(path, json={"fence": 1} if action != "heartbeat" else {})
        assert refused.status_code == 409 and refused.json()["reason"] == "not_holder", action
        assert refused.json()["holder"] == holder
        assert anonymous.post(path, json={}).status_code == 401, action
        assert forged.post(path, json={}).status_code == 401, action
    assert stranger.post(f"/api/sessions/{holder}/end").status_code == 403
    assert anonymous.post(f"/api/sessions/{holder}/end").status_code == 401
    shown = httpx.get(f"{served.url}/api/steps/{step}").json()
    assert (shown["status"], shown["holder"], shown["fence"]) == ("in_progress", holder, 1)


def test_only_the_admin_token_force_releases(
    served: Served, held: tuple[str, str, httpx.Client],
) -> None:
    step, _, holder = held
    path = f"/api/steps/{step}/force-release"
    _, stranger = served.session("stranger")
    assert holder.post(path).status_code == 403  # a session token is not the admin's
    assert stranger.post(path).status_code == 403
    assert httpx.post(f"{served.url}{path}").status_code == 401
    wrong = httpx.post(f"{served.url}{path}", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401  # an unknown credential proves no one
    assert httpx.get(f"{served.url}/api/steps/{step}").json()["status"] == "in_progress"
    admin = httpx.post(f"{served.url}{path}", headers={"Authorization": f"Bearer {ADMIN}"})
    assert admin.status_code == 200 and admin.json()["released"] is True


def test_tokens_never_reach_the_server_log_the_event_log_or_a_recording(
    served: Served, tmp_path: Path,
) -> None:
    session, client = served.session("secretive")
    token = client.headers["Authorization"].removeprefix("Bearer ")
    signature = token.rpartition(".")[2]
    (step,) = served.plan(_fresh_slug(), 1)
    client.post(f"/api/steps/{step}/claim", headers={"Idempotency-Key": "k1"})
    client.post(f"/api/steps/{step}/complete", json={"fence": 99})  # refused, recorded
    httpx.post(f"{served.url}/api/steps/{step}/release",  # a bad token, in the log's way
               headers={"Authorization": f"Bearer {session}.{signature[::-1]}"})
    httpx.post(f"{served.url}/api/steps/{step}/force-release",
               headers={"Authorization": f"Bearer {ADMIN}"})
    recording = tmp_path / "export.jsonl"
    subprocess.run([PLANLEDGER, "replay", "export", str(recording), "--db", served.db],
                   check=True, capture_output=True)
    log = httpx.get(f"{served.url}/api/log", params={"limit": 1000}).text
    secrets = (signature, signature[::-1], ADMIN)
    for where, text in (("server log", served.replica.output()), ("event log", log),
                        ("recording", recording.read_text()),
                        ("store file", Path(served.db).read_bytes().decode("latin-1"))):
        assert not [s for s in secrets if s in text], f"a secret is in the {where}"


def test_defaults_are_safe_for_a_laptop(served: Served, monkeypatch: pytest.MonkeyPatch,
                                        ) -> None:
    for name in ("PLANLEDGER_HOST", "PLANLEDGER_ADMIN_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(db="memory")
    assert settings.host == DEFAULT_HOST == "127.0.0.1"
    assert settings.admin_token is None  # force-release over the API is off until set
    origin = {"Origin": "https://evil.example"}
    preflight = httpx.options(f"{served.url}/api/sessions", headers={
        **origin, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers
    plain = httpx.get(f"{served.url}/api/plans", headers=origin)
    assert "access-control-allow-origin" not in plain.headers
    for path in ("/", "/api/console", "/console/app.js"):  # the console only reads
        assert httpx.get(f"{served.url}{path}").status_code == 200, path
        assert httpx.post(f"{served.url}{path}").status_code in (404, 405), path
    page = httpx.get(served.url).headers
    assert "content-security-policy" in page


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["mcp"], ["ready", "x"]])
def test_a_short_admin_token_is_refused_at_start(tmp_path: Path, command: list[str]) -> None:
    # `a` once force-released any step; a guessable token must never start a server
    env = {**os.environ, "PLANLEDGER_ADMIN_TOKEN": "a" * 31}
    hello = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n'  # stdio MCP waits for a word
    ran = subprocess.run([PLANLEDGER, *command, "--db", str(tmp_path / "l.sqlite")], env=env,
                         capture_output=True, text=True, timeout=60, input=hello,
                         check=False)
    assert ran.returncode == 1, ran.stdout
    assert "PLANLEDGER_ADMIN_TOKEN is 31 characters; at least 32" in ran.stderr
    assert "Traceback" not in ran.stderr
