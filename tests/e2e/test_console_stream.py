"""The console's own routes over a real socket: the snapshot it draws from, and the
stream of log changes that tells it to draw again (server-sent events)."""

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from api.runtime import Runtime, open_runtime
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server, session
from tests.support.seed import seed_auth_refresh

Message = tuple[str, str, dict[str, object]]  # (event, id, data)


@pytest.fixture
def server(tmp_path: Path, clock: FakeClock) -> Iterator[tuple[LiveServer, list[str]]]:
    runtime: Runtime = open_runtime(str(tmp_path / "ledger.sqlite"), clock=clock,
                                    ids=SequentialIds())
    steps = [str(s) for s in seed_auth_refresh(runtime.ledger)]
    with live_server(runtime) as live:
        yield live, steps
    runtime.close()


def _messages(response: httpx.Response) -> Iterator[Message]:
    """Server-sent events as (event, id, data); keep-alive comments are skipped."""
    event, ident, data = "message", "", []
    for line in response.iter_lines():
        if line == "" and data:
            yield event, ident, json.loads("\n".join(data))
            event, ident, data = "message", "", []
        elif line.startswith("event:"):
            event = line.removeprefix("event:").strip()
        elif line.startswith("id:"):
            ident = line.removeprefix("id:").strip()
        elif line.startswith("data:"):
            data.append(line.removeprefix("data:").strip())


def test_each_append_is_streamed_within_a_second_and_a_reconnect_resumes(
    server: tuple[LiveServer, list[str]],
) -> None:
    live, steps = server
    with live.client() as client:
        _, agent = session(client, "agent B")
        with client.stream("GET", "/api/console/events") as stream:
            messages = _messages(stream)
            event, ready_id, ready = next(messages)
            assert event == "ready" and ready["position"] == int(ready_id)
            claimed = client.post(f"/api/steps/{steps[4]}/claim", headers=agent)
            assert claimed.status_code == 200
            sent = time.monotonic()
            event, log_id, page = next(messages)
            assert time.monotonic() - sent < 1.0
        assert event == "log"
        events = page["events"]
        assert isinstance(events, list)
        assert [(e["type"], e["stream"]) for e in events] == [("StepClaimed", steps[4])]
        assert int(log_id) == page["next_after"] > int(ready_id)

        # A browser that lost the stream sends the last id it saw: nothing is missed.
        with client.stream("GET", "/api/console/events",
                           headers={"Last-Event-ID": ready_id}) as stream:
            messages = _messages(stream)
            assert next(messages)[0] == "ready"
            event, again_id, again = next(messages)
        assert (event, again_id, again["events"]) == ("log", log_id, events)


def test_snapshot_shows_holders_with_their_lease_idle_sessions_and_names(
    server: tuple[LiveServer, list[str]], clock: FakeClock,
) -> None:
    live, steps = server
    with live.client() as client:
        a_id, agent_a = session(client, "agent A")
        b_id, agent_b = session(client, "agent B")
        assert client.post(f"/api/steps/{steps[4]}/claim", headers=agent_b).is_success
        shown = client.get("/api/console").json()
        plan = shown["details"][0]
        assert plan["progress"]["line"] == "4/6 done, 1 claimable, 1 in flight"
        cards = {s["session_id"]: s for s in shown["sessions"]}
        assert set(cards) == {a_id, b_id}  # the seeder ended its session
        assert cards[a_id]["holds"] == []
        (held,) = cards[b_id]["holds"]
        assert (held["step_id"], held["fence"], held["lease_seconds"]) == (steps[4], 1, 900)
        assert shown["names"][b_id] == {"name": "agent B", "ended": False}
        assert shown["now"].startswith(clock.now().isoformat()[:19])
        assert shown["admin"] is False

        client.post(f"/api/steps/{steps[4]}/complete", headers=agent_b)
        client.post(f"/api/steps/{steps[5]}/claim", headers=agent_a)
        client.post(f"/api/steps/{steps[5]}/complete", headers=agent_a)
        finished = client.get("/api/console").json()
        assert finished["details"] == []  # a finished plan folds to its summary line
        assert finished["plans"][0]["progress"]["line"] == "6/6 done, 0 claimable, 0 in flight"
        asked = client.get("/api/console", params={"plan": "auth-refresh"}).json()
        assert [p["slug"] for p in asked["details"]] == ["auth-refresh"]


def test_the_page_and_its_assets_are_served_from_the_package_under_a_strict_policy(
    server: tuple[LiveServer, list[str]],
) -> None:
    live, _ = server
    with live.client() as client:
        page = client.get("/")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "connect-src 'self'" in policy
        for asset in ("app.js", "console.css", "favicon.svg"):
            assert client.get(f"/console/{asset}").status_code == 200
        assert "http" not in page.text.replace(live.url, "")  # no address outside the server
