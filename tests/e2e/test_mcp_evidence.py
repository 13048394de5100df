"""Evidence on completion through the official MCP SDK client over streamable HTTP: an agent
completes with its commits, change request and checks, and reads them back in the step's
history; a plan that requires every check to pass refuses a failed one, naming it, as a
tool error; hostile evidence is a tool error naming the field; the tool's schema says
what evidence is."""

from collections.abc import Awaitable, Callable, Iterator

import anyio
import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from tests.e2e.mcp_agents import Agent, agents
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server

SHA = "9fceb02d0ae598e95dc970b74767f19372d61af8"
PR = "https://github.com/example/app/pull/31"
CHECKS = [{"name": "tests", "result": "pass", "command": "pytest -q", "summary": "383 passed"},
          {"name": "lint", "result": "fail", "summary": "2 findings"}]


@pytest.fixture
def server(clock: FakeClock) -> Iterator[LiveServer]:
    runtime: Runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    with live_server(runtime, Settings(db="memory"), lifespan="on") as live:
        yield live
    runtime.close()


def run(server: LiveServer, story: Callable[[Agent], Awaitable[None]]) -> None:
    async def main() -> None:
        async with agents([f"{server.url}/mcp"]) as (agent,):
            await agent.start()
            await story(agent)

    anyio.run(main)


async def claimed(agent: Agent, plan: str, strict: bool = False) -> str:
    made = await agent.ok("plans_create", plan=plan, title="Evidence", steps=["ship it"],
                          require_checks_pass=strict)
    assert made["require_checks_pass"] is strict
    step = str(made["steps"][0]["step_id"])
    await agent.ok("tasks_claim", step_id=step)
    return step


def test_an_agent_completes_with_evidence_and_reads_it_in_the_history(
    server: LiveServer,
) -> None:
    async def story(a: Agent) -> None:
        step = await claimed(a, "lax")
        done = await a.ok("tasks_complete", step_id=step, evidence={
            "commits": [SHA], "branch": "feature/limiter", "pr": PR, "checks": CHECKS})
        assert done["status"] == "done"  # a failed check is kept, not refused, here
        history = (await a.ok("tasks_list", step_id=step))["history"]
        kept = next(e for e in history if e["type"] == "StepCompleted")["data"]["evidence"]
        assert (kept["commits"], kept["branch"], kept["pr"]) == ([SHA], "feature/limiter", PR)
        assert [(c["name"], c["result"]) for c in kept["checks"]] == [("tests", "pass"),
                                                                      ("lint", "fail")]

    run(server, story)


def test_a_plan_that_requires_passing_checks_refuses_a_failed_one_as_a_tool_error(
    server: LiveServer,
) -> None:
    async def story(a: Agent) -> None:
        step = await claimed(a, "strict", strict=True)
        assert (await a.ok("plans_show", plan="strict"))["require_checks_pass"] is True
        refused = await a.refused("tasks_complete", step_id=step,
                                  evidence={"checks": CHECKS})
        assert 'check "lint" failed: plan strict requires every check to pass' in refused
        assert (await a.ok("tasks_list", step_id=step))["steps"][0]["status"] == "in_progress"
        done = await a.ok("tasks_complete", step_id=step, evidence={"checks": CHECKS[:1]})
        assert done["status"] == "done"

    run(server, story)


def test_hostile_evidence_is_a_tool_error_naming_the_field(server: LiveServer) -> None:
    async def story(a: Agent) -> None:
        step = await claimed(a, "hostile")
        for evidence, field in (({"commits": ["not hex!"]}, "evidence.commits[0]"),
                                ({"pr": "javascript:alert(1)"}, "evidence.pr"),
                                ({"commits": ["abcdef1"] * 51}, "commits"),
                                ({"checks": [{"name": "t", "result": "maybe"}]}, "result")):
            refused = await a.refused("tasks_complete", step_id=step, evidence=evidence)
            assert field in refused, refused
        assert (await a.ok("tasks_list", step_id=step))["steps"][0]["status"] == "in_progress"

    run(server, story)


def test_the_tools_schema_describes_evidence(server: LiveServer) -> None:
    async def story(a: Agent) -> None:
        tools = {t.name: t.input_schema for t in (await a.client.list_tools()).tools}
        evidence = tools["tasks_complete"]["properties"]["evidence"]
        shape = evidence["anyOf"][0]
        assert set(shape["properties"]) == {"commits", "branch", "pr", "checks"}
        check = shape["properties"]["checks"]["items"]
        assert set(check["properties"]) == {"name", "result", "command", "summary"}
        assert check["properties"]["result"]["enum"] == ["pass", "fail"]
        assert "require_checks_pass" in tools["plans_create"]["properties"]

    run(server, story)
