"""Discovered work and epics through the official MCP SDK client over streamable HTTP:
plans_create with a parent and children, tasks_add(discovered_from=, parent=, labels=,
priority="P1"), the epic refused while a child is open and closed by the last child's
completion, and its roll-up in plans_show."""

from collections.abc import Awaitable, Callable, Iterator

import anyio
import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from tests.e2e.mcp_agents import Agent, agents
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server


@pytest.fixture
def server(clock: FakeClock) -> Iterator[LiveServer]:
    runtime: Runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    with live_server(runtime, Settings(db="memory"), lifespan="on") as live:
        yield live
    runtime.close()


def run(server: LiveServer, story: Callable[[Agent], Awaitable[None]]) -> None:
    async def main() -> None:
        async with agents([f"{server.url}/mcp"]) as crew:
            (agent,) = crew
            await agent.start()
            await story(agent)

    anyio.run(main)


def test_an_agent_files_discovered_work_under_an_epic_that_closes_with_its_children(
    server: LiveServer,
) -> None:
    async def story(agent: Agent) -> None:
        made = await agent.ok("plans_create", plan="auth", title="Auth", steps=[
            {"key": "epic", "title": "Refresh tokens"},
            {"key": "rotate", "title": "Rotate", "parent": "epic"}])
        refused = await agent.refused("tasks_claim", step_id="auth#1")
        assert 'waits on auth#2 "Rotate" (open)' in refused
        await agent.ok("tasks_claim", step_id="auth#2")
        found = await agent.ok("tasks_add", plan="auth", title="Fix the reuse race",
                               discovered_from="auth#2", parent="auth/epic",
                               labels=["bug"], priority="P1")
        assert found["labels"] == ["bug"] and found["priority"] == 1
        epic_id, rotate_id = (s["step_id"] for s in made["steps"])
        assert (found["parent"], found["discovered_from"]) == (epic_id, rotate_id)
        shown = await agent.ok("plans_show", plan="auth")
        epic, _, fix = shown["steps"]
        assert epic["children"] == "0/2 children done"
        assert (fix["parent_ref"], fix["discovered_from_ref"]) == ("auth#1", "auth#2")
        assert "links" not in fix  # empty: left out
        await agent.ok("tasks_complete", step_id="auth#2")
        await agent.ok("tasks_claim", step_id="auth#3")
        await agent.ok("tasks_complete", step_id="auth#3")
        after = await agent.ok("plans_show", plan="auth")
        assert after["steps"][0]["status"] == "done"
        assert after["progress"]["line"].startswith("3/3 done")

    run(server, story)


def test_tasks_add_keeps_links_as_given_and_refuses_a_child_under_a_done_epic(
    server: LiveServer,
) -> None:
    async def story(agent: Agent) -> None:
        await agent.ok("plans_create", plan="auth", title="Auth", steps=[
            {"key": "epic", "title": "Refresh tokens", "done": True}])
        added = await agent.ok("tasks_add", plan="auth", title="Dedupe",
                               links=[{"kind": "duplicates", "target": "bd-a1b2"}])
        assert added["links"] == [{"kind": "duplicates", "target": "bd-a1b2"}]
        shown = await agent.ok("plans_show", plan="auth")
        assert shown["steps"][1]["links"] == [{"kind": "duplicates", "target": "bd-a1b2"}]
        refused = await agent.refused("tasks_add", plan="auth", title="Late",
                                      parent="auth/epic")
        assert "step auth#1 is done; a step is added only under an open parent" in refused

    run(server, story)
