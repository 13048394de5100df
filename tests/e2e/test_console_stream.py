"""The console's own routes over a real socket: the snapshot it draws from, and the
stream of log changes that tells it to draw again (server-sent events)."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from planledger.api.runtime import Runtime, open_runtime
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server, session
from tests.support.seed import seed_auth_refresh
from tests.support.sse import sent_events

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
    """Server-sent events as (event, id, data parsed)."""
    for event, ident, data in sent_events(response):
        yield event, ident, json.loads(data)


def test_each_append_is_streamed_and_a_reconnect_resumes(
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
            event, log_id, page = next(messages)  # (how soon: bench `console`, not a margin)
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


def _plan(client: httpx.Client, headers: dict[str, str], slug: str, count: int,
          ) -> list[str]:
    """Create a plan of `count` independent steps named `step 1`...; their ids in order."""
    created = client.post("/api/plans", headers=headers, json={
        "slug": slug, "title": slug, "steps": [{"title": f"step {i + 1}"}
                                               for i in range(count)]})
    assert created.status_code == 201, created.text
    return [str(s["step_id"]) for s in created.json()["steps"]]


def _next_log(messages: Iterator[Message]) -> dict[str, Any]:
    event, _, data = next(messages)
    assert event == "log"
    return data


def test_a_claim_streams_the_step_its_plan_progress_and_its_holder_as_they_are_now(
    server: tuple[LiveServer, list[str]],
) -> None:
    live, steps = server
    with live.client() as client:
        b_id, agent_b = session(client, "agent B")
        with client.stream("GET", "/api/console/events") as stream:
            messages = _messages(stream)
            assert next(messages)[0] == "ready"
            assert client.post(f"/api/steps/{steps[4]}/claim", headers=agent_b).is_success
            change = _next_log(messages)
    (step,) = change["steps"]
    assert (step["step_id"], step["holder"], step["fence"]) == (steps[4], b_id, 1)
    (plan,) = change["plans"]
    assert plan["progress"]["line"] == "4/6 done, 1 claimable, 1 in flight"
    (card,) = change["sessions"]
    assert card["session_id"] == b_id and [h["step_id"] for h in card["holds"]] == [steps[4]]
    assert change["names"][b_id] == {"name": "agent B", "ended": False}
    assert change["stale_plans"] == [] and change["live_sessions"] == 1


def test_completing_a_step_streams_the_steps_that_waited_on_it(
    tmp_path: Path, clock: FakeClock,
) -> None:
    runtime = open_runtime(str(tmp_path / "ledger.sqlite"), clock=clock, ids=SequentialIds())
    steps = [str(s) for s in seed_auth_refresh(runtime.ledger, race=False)]
    with live_server(runtime) as live, live.client() as client:
        _, agent = session(client, "agent A")
        assert client.post(f"/api/steps/{steps[4]}/claim", headers=agent).is_success
        with client.stream("GET", "/api/console/events") as stream:
            messages = _messages(stream)
            assert next(messages)[0] == "ready"
            done = client.post(f"/api/steps/{steps[4]}/complete", headers=agent,
                               json={"fence": 1})
            assert done.is_success, done.text
            change = _next_log(messages)
    runtime.close()
    shown = {s["step_id"]: s for s in change["steps"]}
    assert shown[steps[4]]["status"] == "done"
    assert shown[steps[5]]["claimable"] is True and shown[steps[5]]["blockers"] == []
    assert change["plans"][0]["progress"]["line"] == "5/6 done, 1 claimable, 0 in flight"
    assert change["sessions"][0]["holds"] == []


def test_a_plan_created_at_once_is_named_to_read_again_not_sent_step_by_step(
    server: tuple[LiveServer, list[str]],
) -> None:
    live, _ = server
    with live.client() as client:
        _, agent = session(client, "planner")
        with client.stream("GET", "/api/console/events") as stream:
            messages = _messages(stream)
            assert next(messages)[0] == "ready"
            _plan(client, agent, "wide", 150)
            change = _next_log(messages)
    assert change["stale_plans"] == ["wide"]
    assert change["steps"] == []
    assert [p["slug"] for p in change["plans"]] == ["wide"]


def test_the_first_read_holds_one_page_of_a_large_plan_and_pages_reach_every_step(
    server: tuple[LiveServer, list[str]],
) -> None:
    live, _ = server
    with live.client() as client:
        _, agent = session(client, "planner")
        ids = _plan(client, agent, "large", 230)
        first = client.get("/api/console").json()
        large = next(p for p in first["details"] if p["slug"] == "large")
        assert [s["step_id"] for s in large["steps"]] == ids[:50]
        assert large["next_offset"] == 50 and large["progress"]["total"] == 230
        seen, offset = [s["step_id"] for s in large["steps"]], large["next_offset"]
        while offset is not None:
            page = client.get("/api/console/steps", params={"plan": "large", "offset": offset,
                                                            "limit": 100}).json()
            assert page["offset"] == offset and len(page["steps"]) <= 100
            seen += [s["step_id"] for s in page["steps"]]
            offset = page["next_offset"]
    assert seen == ids


def test_steps_filtered_by_kind_and_title_page_through_the_whole_plan(
    server: tuple[LiveServer, list[str]],
) -> None:
    live, _ = server
    with live.client() as client:
        _, agent = session(client, "agent H")
        ids = _plan(client, agent, "filtered", 120)
        for step_id in (ids[3], ids[110]):
            assert client.post(f"/api/steps/{step_id}/claim", headers=agent).is_success

        def pages(**params: object) -> list[str]:
            found: list[str] = []
            offset: int | None = 0
            while offset is not None:
                page = client.get("/api/console/steps", params={
                    "plan": "filtered", "offset": offset, "limit": 1, **params})
                assert page.status_code == 200, page.text
                found += [s["title"] for s in page.json()["steps"]]
                offset = page.json()["next_offset"]
            return found

        assert pages(show="held") == ["step 4", "step 111"]
        assert pages(text="STEP 11") == ["step 11", *(f"step {n}" for n in range(110, 120))]
        assert pages(show="held", text="111") == ["step 111"]
        assert len(pages(show="claimable")) == 118


def test_an_unknown_plan_or_kind_of_step_is_named_not_a_500(
    server: tuple[LiveServer, list[str]],
) -> None:
    live, _ = server
    with live.client() as client:
        unknown = client.get("/api/console/steps", params={"plan": "no-such-plan"})
        assert unknown.status_code == 404 and "no-such-plan" in unknown.json()["message"]
        for params in ({"plan": "auth-refresh", "show": "everything"},
                       {"plan": "auth-refresh", "offset": -1},
                       {"plan": "auth-refresh", "limit": 100_000},
                       {"plan": "auth-refresh", "text": "x" * 101},
                       {"plan": "Not A Slug"}):
            answer = client.get("/api/console/steps", params=params)
            assert answer.status_code == 422, (params, answer.text)
            assert answer.json()["message"]


def test_the_first_timeline_read_is_the_newest_part_of_a_plan_and_continues_as_the_whole(
    server: tuple[LiveServer, list[str]],
) -> None:
    live, _ = server
    with live.client() as client:
        _, agent = session(client, "planner")
        ids = _plan(client, agent, "long", 900)  # 1,801 events: created, added and opened
        assert client.post(f"/api/steps/{ids[0]}/claim", headers=agent).is_success
        whole = client.get("/api/timeline", params={"plan": "long"}).json()
        tail = client.get("/api/console/timeline", params={"plan": "long"}).json()
        assert 100 < len(tail["entries"]) <= 400 < len(whole["entries"])
        assert tail["entries"] == whole["entries"][-len(tail["entries"]):]
        assert tail["next_after"] == whole["next_after"]
        assert client.post(f"/api/steps/{ids[1]}/claim", headers=agent).is_success
        since = client.get("/api/timeline", params={"plan": "long",
                                                    "after": tail["next_after"]}).json()
        assert [e["kind"] for e in since["entries"]] == ["claimed"]
        missing = client.get("/api/console/timeline", params={"plan": "no-such-plan"})
        assert missing.status_code == 404
