"""The agent's side of the table (issue 19), as an agent checks it through the official MCP
SDK client over streamable HTTP: one vocabulary with the names other task queues use
accepted as aliases, every answer one JSON text block, refusals that carry their facts,
the plan's progress on every answer about its state, the session's where and findings kept,
plans made where agents expect them, held steps revised by their holder only, a lapsed step
reading open, a short briefing, and tool schemas every client can read.

The app is served in-process on a real socket with an injected clock, so a lease lapses
when the test moves the clock, not after a sleep."""

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from planledger.api import reads
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from planledger.ledger.domain.claims import MIN_LEASE_SECONDS
from tests.e2e.mcp_agents import Agent, agents, text
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server
from tests.support.mcp_wire import Wire, answer

ADMIN = "admin-token-for-the-vocabulary-tests-0123456789abcdef"
LEASE = 900  # the server's default lease


@pytest.fixture
def server(clock: FakeClock) -> Iterator[LiveServer]:
    runtime: Runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    settings = Settings(db="memory", lease_default=LEASE, admin_token=ADMIN)
    with live_server(runtime, settings, lifespan="on") as live:
        yield live
    runtime.close()


def run(server: LiveServer, crew: int, story: Callable[..., Awaitable[None]]) -> None:
    """Run `story` with `crew` connected agents, each with its session started."""
    async def main() -> None:
        async with agents([f"{server.url}/mcp"] * crew) as found:
            for agent in found:
                await agent.start()
            await story(*found)

    anyio.run(main)


async def three_steps(agent: Agent, plan: str = "vocab") -> list[str]:
    created = await agent.ok("plans_create", plan=plan, title="Vocabulary",
                             steps=["first", "second", "third"])
    return [s["step_id"] for s in created["steps"]]


def one_json_block(result: Any) -> Any:
    """The answer's only content block, parsed; it must equal the structured content."""
    assert len(result.content) == 1, result.content
    shown = json.loads(result.content[0].text)
    assert shown == result.structured_content
    return shown


# One vocabulary, aliases accepted ---------------------------------------------------------

def test_id_slug_content_text_empty_strings_and_comma_separated_ids_are_read_as_meant(
    server: LiveServer,
) -> None:
    async def story(a: Agent) -> None:
        created = await a.ok("plans_create", slug="vocab", title="Vocabulary",
                             steps=["first", "second"])
        first, second = (s["step_id"] for s in created["steps"])
        assert (await a.ok("plans_show", slug="vocab"))["slug"] == "vocab"

        both = await a.ok("tasks_add", plan="vocab", title="third", content="said as content",
                          depends_on=f"{first}, {second}", session_id="", token="")
        one = await a.ok("tasks_add", slug="vocab", title="fourth", text="said as text",
                         depends_on=first)
        assert both["depends_on"] == [first, second] and one["depends_on"] == [first]
        await a.ok("tasks_update", id=one["step_id"], content="revised as content",
                   add_depends_on=second)
        shown = {s["step_id"]: s for s in (await a.ok("tasks_list", plan="vocab"))["steps"]}
        assert shown[both["step_id"]]["body"] == "said as content"
        assert shown[one["step_id"]]["body"] == "revised as content"
        assert shown[one["step_id"]]["depends_on"] == [first, second]

        claimed = await a.ok("tasks_claim", id=first, lease_seconds="", session_id="")
        assert (claimed["step_id"], claimed["expires_at"] is not None) == (first, True)
        assert (await a.ok("tasks_list", id=first))["steps"][0]["holder"] == a.session_id
        assert (await a.ok("tasks_ready", plan=""))["ready"][0]["step_id"] == second

        # a plan's step objects are read alike: content/text for body, ids as one string
        steps = await a.ok("plans_create", plan="nested", title="Nested", steps=[
            {"key": "a", "title": "a", "content": "said as content"},
            {"key": "b", "title": "b", "text": "said as text", "depends_on": ""},
            {"key": "c", "title": "c", "depends_on": "a, b"}])
        a_id, b_id, c_id = (s["step_id"] for s in steps["steps"])
        shown = {s["step_id"]: s for s in (await a.ok("plans_show", plan="nested"))["steps"]}
        assert (shown[a_id]["body"], shown[b_id]["body"]) == ("said as content", "said as text")
        assert shown[c_id]["depends_on"] == [a_id, b_id]

    run(server, 1, story)


def test_a_raw_json_rpc_call_saying_id_claims_the_step(server: LiveServer) -> None:
    """What a hand-written client sends: `id` for the step, no SDK in between."""
    async def plan(a: Agent) -> None:
        steps.extend(await three_steps(a))

    steps: list[str] = []
    run(server, 1, plan)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        wire = Wire(http)
        connection = wire.open()
        started = answer(wire.call(connection, "session_start", name="raw agent")).result
        assert started is not None
        sent = wire.call(connection, "tasks_claim", id=steps[0])
    result = sent.json()["result"]
    assert not result.get("isError"), result
    claimed = result["structuredContent"]
    assert [json.loads(c["text"]) for c in result["content"]] == [claimed]
    assert (claimed["step_id"], claimed["id"], claimed["holder"]) == (
        steps[0], steps[0], started["session_id"])


def test_answers_say_step_id_and_id_and_a_claim_reads_in_progress_held_by_you(
    server: LiveServer,
) -> None:
    async def story(a: Agent) -> None:
        first, second, third = await three_steps(a)
        claimed = await a.ok("tasks_claim", step_id=first)
        assert (claimed["id"], claimed["status"], claimed["holder"]) == (
            first, "in_progress", a.session_id)
        assert "claimed_by" not in claimed
        nxt = (await a.ok("tasks_claim_next", plan="vocab"))["claimed"]
        assert (nxt["step_id"], nxt["id"], nxt["status"], nxt["holder"]) == (
            second, second, "in_progress", a.session_id)
        ready = await a.ok("tasks_ready", plan="vocab")
        assert [(s["step_id"], s["id"]) for s in ready["ready"]] == [(third, third)]
        held = {s["id"]: s["holder"] for s in ready["held"]}
        assert held == {first: a.session_id, second: a.session_id}
        done = await a.ok("tasks_complete", step_id=first)
        assert (done["step_id"], done["id"], done["status"]) == (first, first, "done")
        added = await a.ok("tasks_add", plan="vocab", title="fourth")
        assert added["id"] == added["step_id"]

    run(server, 1, story)


def test_every_answer_is_one_json_text_block_equal_to_its_structured_content(
    server: LiveServer,
) -> None:
    async def story(a: Agent) -> None:
        empty = await a.call("plans_list")  # an empty ledger still answers, in words too
        assert not empty.is_error
        assert one_json_block(empty) == {"result": []}  # a list travels as {"result": [...]}

        first, *_ = await three_steps(a)
        calls: list[tuple[str, dict[str, Any]]] = [
            ("plans_list", {}), ("plans_show", {"plan": "vocab"}),
            ("tasks_ready", {"plan": "vocab"}), ("tasks_list", {"plan": "vocab"}),
            ("tasks_claim", {"step_id": first}), ("tasks_claim_next", {"plan": "vocab"}),
            ("tasks_release", {"step_id": first}), ("tasks_add", {"title": "fourth"}),
            ("session_end", {}),
        ]
        for tool, arguments in calls:
            result = await a.call(tool, **arguments)
            assert not result.is_error, (tool, text(result))
            one_json_block(result)

    run(server, 1, story)


# Refusals an agent can act on -------------------------------------------------------------

def test_a_bounce_names_the_holder_by_id_and_name_and_carries_when_to_retry(
    server: LiveServer, clock: FakeClock,
) -> None:
    async def story(a: Agent, b: Agent) -> None:
        first, *_ = await three_steps(a)
        granted = await a.ok("tasks_claim", step_id=first)
        clock.advance(100)
        bounced = await b.call("tasks_claim", step_id=first)
        assert bounced.is_error
        assert text(bounced).startswith(
            f'task already claimed: held by "{a.session_id}" (agent A) (step vocab#1 "first")')
        facts = bounced.structured_content
        assert facts == {"reason": "already_claimed", "message": text(bounced),
                         "step_id": first, "holder": a.session_id, "holder_name": "agent A",
                         "fence": granted["fence"], "retry_after": LEASE - 100}

    run(server, 2, story)


def test_blocked_stale_and_invalid_refusals_carry_their_facts(server: LiveServer,
                                                             clock: FakeClock) -> None:
    async def story(a: Agent, b: Agent) -> None:
        first, *_ = await three_steps(a)
        later = await a.ok("tasks_add", plan="vocab", title="after first", depends_on=[first])
        blocked = await a.call("tasks_claim", step_id=later["step_id"])
        assert blocked.is_error and blocked.structured_content is not None
        assert blocked.structured_content["reason"] == "blocked"
        assert [x["step_id"] for x in blocked.structured_content["blockers"]] == [first]

        await a.ok("tasks_claim", step_id=first, lease_seconds=MIN_LEASE_SECONDS)
        clock.advance(MIN_LEASE_SECONDS + 1)
        taken = await b.ok("tasks_claim", step_id=first)
        stale = await a.call("tasks_complete", step_id=first, fence=1)
        assert stale.is_error and stale.structured_content is not None
        assert (stale.structured_content["reason"], stale.structured_content["step_id"]) == (
            "stale_fence", first)
        assert taken["fence"] == 2

        bad = await a.call("tasks_claim", step_id=first, lease_seconds="soon")
        assert bad.is_error and bad.structured_content == {
            "reason": "invalid_input", "message": text(bad)}
        assert "lease_seconds" in text(bad)

    run(server, 2, story)


# The plan's progress on every answer about its state --------------------------------------

def test_claims_closes_and_ready_answers_carry_the_plans_progress_line(
    server: LiveServer,
) -> None:
    async def story(a: Agent) -> None:
        first, second, third = await three_steps(a)
        lines = [
            (await a.ok("tasks_claim", step_id=first))["progress"],
            (await a.ok("tasks_claim_next", plan="vocab"))["progress"],
            (await a.ok("tasks_complete", step_id=first))["progress"],
            (await a.ok("tasks_release", step_id=second))["progress"],
            (await a.ok("tasks_drop", step_id=third))["progress"],
            (await a.ok("tasks_ready", plan="vocab"))["progress"],
        ]
        assert lines == [
            "0/3 done, 2 claimable, 1 in flight",
            "0/3 done, 1 claimable, 2 in flight",
            "1/3 done, 1 claimable, 1 in flight",
            "1/3 done, 2 claimable, 0 in flight",
            "1/3 done, 1 claimable, 0 in flight, 1 dropped",
            "1/3 done, 1 claimable, 0 in flight, 1 dropped",
        ]
        assert (await a.ok("plans_show", plan="vocab"))["progress"]["line"] == lines[-1]

    run(server, 1, story)


# Sessions: where an agent works, what it found --------------------------------------------

def test_session_start_keeps_cwd_source_model_and_session_end_its_findings(
    server: LiveServer,
) -> None:
    said: dict[str, str] = {}

    async def story() -> None:
        async with agents([f"{server.url}/mcp"]) as (a,):
            started = await a.ok("session_start", name="agent A", cwd="/home/dev/app",
                                 source="claude-code", model="some-model")
            a.session_id = said["session"] = started["session_id"]
            first, *_ = await three_steps(a)
            await a.ok("tasks_claim", step_id=first)
            ended = await a.ok("session_end", findings="rate limit needs shared storage")
            assert ended["released"] == [first]  # the session ended: its claim is free
            after = await a.call("tasks_claim", step_id=first)
            assert after.is_error

    anyio.run(story)
    events = {e.type: e for e in reads.log_page(server.runtime, 0, 100).events
              if e.stream == said["session"]}
    started = events["SessionStarted"].data
    assert (started["cwd"], started["source"], started["model"]) == (
        "/home/dev/app", "claude-code", "some-model")
    assert events["SessionEnded"].data["findings"] == "rate limit needs shared storage"


# Plans where agents expect them -----------------------------------------------------------

def test_tasks_add_naming_a_missing_plan_creates_it_and_says_so(server: LiveServer) -> None:
    async def story(a: Agent) -> None:
        made = await a.ok("tasks_add", plan="typo-plan", title="found work")
        assert made["plan_created"] is True and made["plan"] == "typo-plan"
        assert 'plan "typo-plan" did not exist: created it' in made["note"]
        shown = await a.ok("plans_show", plan="typo-plan")
        assert shown["title"] == "typo-plan"
        assert [s["step_id"] for s in shown["steps"]] == [made["step_id"]]
        again = await a.ok("tasks_add", plan="typo-plan", title="more work")
        assert "plan_created" not in again and again.get("note") is None

    run(server, 1, story)


def test_a_refused_tasks_add_leaves_no_plan_behind(server: LiveServer) -> None:
    async def story(a: Agent) -> None:
        refused = await a.call("tasks_add", plan="ghost-plan", title="")
        assert refused.is_error and "title" in text(refused)
        unknown = await a.call("tasks_add", plan="ghost-plan", title="t",
                               depends_on=["01KXMRCX4W2M8YB5Q2Y3V9ZP7N"])
        assert unknown.is_error
        missing = await a.call("plans_show", plan="ghost-plan")
        assert missing.is_error and missing.structured_content is not None
        assert missing.structured_content["reason"] == "unknown_plan"

    run(server, 1, story)


def test_a_plan_just_created_without_steps_takes_steps_without_being_named(
    server: LiveServer,
) -> None:
    async def story(a: Agent) -> None:
        await a.ok("plans_create", plan="fresh", title="Fresh")
        added = await a.ok("tasks_add", title="its first step")
        assert (added["plan"], added.get("plan_created")) == ("fresh", None)

    run(server, 1, story)


# Held steps ------------------------------------------------------------------------------

def test_only_the_holder_or_the_admin_revises_a_held_step(server: LiveServer) -> None:
    async def story(a: Agent, b: Agent) -> None:
        first, second, *_ = await three_steps(a)
        await a.ok("tasks_claim", step_id=first)
        refused = await b.call("tasks_update", step_id=first, title="hijacked")
        assert refused.is_error
        depends = await b.call("tasks_update", step_id=first, add_depends_on=[second])
        assert depends.is_error and "only its holder" in text(depends)
        assert text(refused) == (f'step {first} is held by "{a.session_id}" (agent A): '
                                 "only its holder (or the admin) revises it")
        assert refused.structured_content is not None
        assert {k: refused.structured_content[k] for k in ("reason", "holder", "holder_name")
                } == {"reason": "held_elsewhere", "holder": a.session_id,
                      "holder_name": "agent A"}
        assert (await a.ok("tasks_update", step_id=first, body="by its holder"))["body"] == (
            "by its holder")
        by_admin = await b.ok("tasks_update", step_id=first, title="renamed", token=ADMIN)
        assert (by_admin["title"], by_admin["holder"]) == ("renamed", a.session_id)

        await a.ok("tasks_release", step_id=first)
        assert (await b.ok("tasks_update", step_id=first, title="free now"))["title"] == (
            "free now")

    run(server, 2, story)


def test_a_lapsed_step_reads_open_and_claimable_in_every_listing(
    server: LiveServer, clock: FakeClock,
) -> None:
    async def story(a: Agent, b: Agent) -> None:
        first, *_ = await three_steps(a)
        await a.ok("tasks_claim", step_id=first, lease_seconds=MIN_LEASE_SECONDS)
        assert (await b.ok("tasks_list", step_id=first))["steps"][0]["status"] == "in_progress"
        clock.advance(MIN_LEASE_SECONDS)  # a lease at its expiry no longer holds

        ready = await b.ok("tasks_ready", plan="vocab")
        lapsed = next(s for s in ready["ready"] if s["step_id"] == first)
        assert (lapsed["status"], lapsed["claimable"], lapsed.get("holder")) == ("open", True, None)
        assert lapsed["lapsed_holder"] == a.session_id
        assert first in {s["step_id"] for s in ready["ready"] if s["status"] == "open"}
        listed = await b.ok("tasks_list", plan="vocab", status="open")
        assert first in [s["step_id"] for s in listed["steps"]]
        shown = await b.ok("plans_show", plan="vocab")
        assert next(s for s in shown["steps"] if s["step_id"] == first)["status"] == "open"
        assert (await b.ok("tasks_claim", step_id=first))["holder"] == b.session_id

    run(server, 2, story)


# The briefing stays short ------------------------------------------------------------------

def test_the_briefing_names_five_plans_most_claimable_first_and_counts_the_rest(
    server: LiveServer,
) -> None:
    async def story(a: Agent) -> None:
        for size in range(1, 8):  # plan-1 has one claimable step ... plan-7 seven
            await a.ok("plans_create", plan=f"plan-{size}", title=f"Plan {size}",
                       steps=[f"step {i}" for i in range(size)],
                       constraints={f"rule-{size}": f"honour rule {size}"})
        await a.ok("plans_create", plan="finished", title="Finished", steps=["only"])
        only = (await a.ok("tasks_claim_next", plan="finished"))["claimed"]["step_id"]
        await a.ok("tasks_complete", step_id=only)

        brief = await a.ok("session_start", name="newcomer")
        assert [p["slug"] for p in brief["plans"]] == [f"plan-{n}" for n in (7, 6, 5, 4, 3)]
        assert brief["plans"][0]["constraints"] == {"rule-7": "honour rule 7"}
        assert brief["more_plans"] == 2
        assert "2 more plans are in motion" in brief["briefing"]
        assert "plan-2" not in brief["briefing"] and "finished" not in brief["briefing"]

    run(server, 1, story)


# Schemas every client can read -------------------------------------------------------------

def _properties(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property schema in `node`, however deeply nested, with where it sits."""
    if isinstance(node, dict):
        for name, prop in node.get("properties", {}).items():
            yield f"{where}.{name}", prop
        for key, value in node.items():
            yield from _properties(value, f"{where}.{key}" if key != "properties" else where)
    elif isinstance(node, list):
        for item in node:
            yield from _properties(item, where)


def test_every_tool_schema_is_inline_and_each_argument_has_a_description_and_a_type(
    server: LiveServer,
) -> None:
    async def story(a: Agent) -> None:
        tools = (await a.client.list_tools()).tools
        assert len(tools) >= 14
        for tool in tools:
            schema = tool.input_schema
            raw = json.dumps(schema)
            assert "$ref" not in raw and "$defs" not in raw, tool.name
            for where, prop in _properties(schema, tool.name):
                assert prop.get("description"), f"{where} has no description"
                assert "type" in prop, f"{where} has no type"
        by_name = {t.name: t.input_schema for t in tools}
        lease = by_name["tasks_claim"]["properties"]["lease_seconds"]
        assert lease["type"] == ["integer", "null"]
        step = by_name["plans_create"]["properties"]["steps"]["anyOf"][0]["items"]["anyOf"][0]
        assert set(step["properties"]) == {"key", "title", "body", "depends_on", "paths",
                                           "priority", "review", "parent", "discovered_from",
                                           "labels", "links", "done", "note"}

        # the inlined step objects are still what the tool takes
        made = await a.ok("plans_create", plan="inline", title="Inline", steps=[
            {"key": "a", "title": "first", "body": "details"},
            {"title": "second", "depends_on": ["a"]}])
        first, second = made["steps"]
        assert second["depends_on"] == [first["step_id"]]

    run(server, 1, story)
