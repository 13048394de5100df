"""The MCP tools over streamable HTTP, at /mcp on a real `planledger serve` process, through
the official SDK client: the seed's story, a claim-next race, the acting session, and bad
arguments answered as tool errors while the server keeps serving."""

from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from planledger.bench.servers import Replica, start_replica
from tests.e2e.mcp_agents import (
    PLAN,
    Agent,
    agents,
    ready_listings,
    replay_seed_story,
    seeded_store,
    together,
)

TOOLS = {"session_start", "session_end", "tasks_add", "tasks_update", "tasks_list",
         "tasks_ready", "tasks_claim", "tasks_release", "tasks_complete", "tasks_drop",
         "tasks_claim_next", "tasks_note", "paths_check", "plans_create", "plans_list",
         "plans_show", "tasks_review"}
UNKNOWN_STEP = "01KXMRCX4W2M8YB5Q2Y3V9ZP7N"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[str]]:
    db = str(Path(tmp_path_factory.mktemp("mcp-http")) / "ledger.sqlite")
    return db, seeded_store(db)


@pytest.fixture(scope="module")
def server(store: tuple[str, list[str]]) -> Iterator[Replica]:
    replica = start_replica(store[0])
    yield replica
    replica.stop()


def mcp_url(server: Replica) -> str:
    return f"{server.url}/mcp"


def test_two_agents_replay_the_seed_story_one_claim_lands_the_other_names_the_winner(
    server: Replica, store: tuple[str, list[str]],
) -> None:
    async def story() -> tuple[Agent, Agent]:
        async with agents([mcp_url(server)] * 2) as (a, b):
            return await replay_seed_story(a, b)

    winner, loser = anyio.run(story)
    step5, step6 = store[1][4:]
    listed = ready_listings(store[0])
    assert listed[winner.session_id] == listed[loser.session_id] == [[step5, step6]]


def test_eight_clients_racing_claim_next_claim_each_of_twenty_steps_exactly_once(
    server: Replica,
) -> None:
    async def race() -> tuple[list[str], list[list[str]], dict[str, str]]:
        # half keep a connection (handshake era), half send their token on every call
        async with agents([mcp_url(server)] * 8, ["legacy", "auto"] * 4) as crew:
            await together(*(agent.start() for agent in crew))
            created = await crew[0].ok("plans_create", slug="race-20", title="Twenty steps",
                                       steps=[f"step {i}" for i in range(20)])
            results = await together(*(_claim_until_all_held(agent) for agent in crew))
            shown = await crew[0].ok("plans_show", slug="race-20")
            holders = {s["step_id"]: s.get("holder") for s in shown["steps"]}
            claimers = {sid: agent.session_id for agent, got in zip(crew, results, strict=True)
                        for sid in got}
            assert holders == claimers
            return [s["step_id"] for s in created["steps"]], results, holders

    step_ids, results, holders = anyio.run(race)
    claimed = [step for got in results for step in got]
    assert sorted(claimed) == sorted(step_ids)  # all twenty, none twice
    assert len(set(holders.values())) > 1


async def _claim_until_all_held(agent: Agent) -> list[str]:
    got = []
    while True:
        answer = await agent.ok("tasks_claim_next", plan="race-20")
        if answer["claimed"] is None:
            assert answer["reason"] == "all_held", answer
            return got
        assert answer["claimed"]["holder"] == agent.session_id
        got.append(answer["claimed"]["step_id"])


def test_bad_arguments_are_tool_errors_naming_the_argument_and_the_server_keeps_serving(
    server: Replica, store: tuple[str, list[str]],
) -> None:
    step5 = store[1][4]
    cases = [
        ("tasks_claim", {}, "invalid input: step_id: Field required"),
        ("tasks_claim", {"id": 42}, "step_id: Input should be a valid string"),
        ("tasks_claim", {"id": step5, "lease_seconds": "soon"},
         "lease_seconds: Input should be a valid integer"),
        ("tasks_claim", {"id": step5, "lease_seconds": -30},
         "invalid lease_seconds: -30 is outside 1..86400 seconds"),
        ("tasks_claim", {"id": UNKNOWN_STEP}, f'step not found: "{UNKNOWN_STEP}"'),
        ("tasks_complete", {"id": "no such id!"}, "step_id: String should match pattern"),
        ("tasks_update", {"id": step5, "status": "finished"}, "status: Input should be"),
        ("plans_show", {"slug": "no-such-plan"}, 'plan not found: "no-such-plan"'),
        ("plans_create", {"slug": "bad-deps", "title": "t", "steps": [
            {"title": "a", "depends_on": ["nowhere"]}]}, "depends on unknown step(s)"),
    ]

    async def careless() -> None:
        async with agents([mcp_url(server)]) as (agent,):
            no_session = await agent.refused("tasks_claim", id=step5)
            assert no_session.startswith("no session: call session_start first")
            await agent.start()
            for tool, arguments, expected in cases:
                answer = await agent.refused(tool, **arguments)
                assert expected in answer, (tool, arguments, answer)
            assert (await agent.ok("plans_show", slug=PLAN))["slug"] == PLAN

    anyio.run(careless)
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200


def test_a_call_acts_for_its_connections_session_never_a_guess_and_others_need_a_token(
    server: Replica,
) -> None:
    async def acting() -> None:
        async with agents([mcp_url(server)] * 2 + [mcp_url(server)],
                          ["legacy", "legacy", "auto"]) as (one, two, stateless):
            first = await one.start()
            second = await one.ok("session_start", name="one, again")
            await one.ok("plans_create", slug="acting", title="Acting", steps=["only"],
                         session_id=first["session_id"])  # a write names its author
            several = await one.refused("tasks_claim_next", plan="acting")
            assert f"({first['session_id']}, {second['session_id']})" in several
            await two.start()
            assert "was not started on this connection" in await two.refused(
                "session_end", session_id=first["session_id"])
            assert "the token is for session" in await two.refused(
                "session_end", session_id=first["session_id"], token=two.token)
            await two.ok("session_end", token=first["token"])  # ended from elsewhere
            claimed = await one.ok("tasks_claim_next", plan="acting")  # one session left
            assert claimed["claimed"]["holder"] == second["session_id"]

            started = await stateless.start()
            assert "pass token on every call" in started["briefing"]
            stateless.pass_token = False
            assert (await stateless.refused("tasks_claim_next", plan="acting")).startswith(
                "no session")
            stateless.pass_token = True
            assert (await stateless.ok("tasks_claim_next", plan="acting"))["reason"] == "all_held"

    anyio.run(acting)


def test_every_tool_is_listed_with_a_description_and_a_typed_input_schema(
    server: Replica,
) -> None:
    async def listing() -> dict[str, object]:
        async with agents([mcp_url(server)]) as (agent,):
            return {t.name: t for t in (await agent.client.list_tools()).tools}

    tools = anyio.run(listing)
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description or "") > 80, tool.name  # type: ignore[attr-defined]
    claim = tools["tasks_claim"].input_schema  # type: ignore[attr-defined]
    assert claim["required"] == ["step_id"]
    assert claim["properties"]["step_id"]["type"] == "string"
    assert {"type": "integer"} in claim["properties"]["lease_seconds"]["anyOf"]
    assert "call tasks_ready again" in tools["tasks_claim"].description  # type: ignore[attr-defined]


def test_steps_are_added_revised_moved_dropped_and_listed_through_the_tools(
    server: Replica,
) -> None:
    async def shaping() -> None:
        async with agents([mcp_url(server)]) as (agent,):
            await agent.start()
            made = await agent.ok("plans_create", slug="shaping", title="Shaping",
                                  steps=["first"], constraints={"small": "keep it small"})
            first = made["steps"][0]["step_id"]
            second = await agent.ok("tasks_add", plan="shaping", title="second",
                                    depends_on=[first])
            ready = await agent.ok("tasks_ready", plan="shaping")
            assert [s["title"] for s in ready["ready"]] == ["first"]
            assert ready["blocked"][0]["blockers"][0]["step_id"] == first

            moved = await agent.ok("tasks_update", id=first, title="first, revised",
                                   status="in_progress")
            assert (moved["title"], moved["holder"]) == ("first, revised", agent.session_id)
            released = await agent.ok("tasks_update", id=first, status="open")
            assert released["status"] == "open" and "holder" not in released
            dropped = await agent.ok("tasks_drop", id=first)
            assert (dropped["status"], dropped["progress"]) == (
                "dropped", "0/2 done, 1 claimable, 0 in flight, 1 dropped")
            reopened = await agent.ok("tasks_update", id=first, status="open")
            assert reopened["status"] == "open"
            again = await agent.refused("tasks_update", id=first, status="open")
            assert f"cannot reopen step {first}: it is open" in again, again
            assert "claim it first" not in again
            cycle = await agent.refused("tasks_update", id=first,
                                        add_depends_on=[second["step_id"]])
            assert cycle.startswith("dependency cycle:")

            listed = await agent.ok("tasks_list", plan="shaping", status="open")
            assert [s["title"] for s in listed["steps"]] == ["first, revised", "second"]
            detail = await agent.ok("tasks_list", id=first)
            assert [e["type"] for e in detail["history"]][-4:] == [
                "StepClaimed", "StepReleased", "StepDropped", "StepReopened"]
            ended = await agent.ok("session_end")
            assert ended["released"] == []

    anyio.run(shaping)


def test_a_tool_call_is_answered_with_one_json_body_not_an_event_stream(server: Replica) -> None:
    """What a client that accepts both gets back: the JSON-RPC answer as the body."""
    headers = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=10) as http:
        opened = http.post("/mcp", json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-03-26", "capabilities": {},
                "clientInfo": {"name": "raw client", "version": "1"}}})
        http.headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        called = http.post("/mcp", json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "session_start", "arguments": {"name": "raw client"}}})
    assert called.status_code == 200
    assert called.headers["content-type"].startswith("application/json")
    assert called.json()["id"] == 2 and not called.json()["result"].get("isError")
