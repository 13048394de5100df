"""Step references through the official MCP SDK client over streamable HTTP: an agent
claims, heartbeats, notes and completes a step named `plan#N` or `plan/key`, adds a step
with a key that depends on references, reads the references in every step answer, and is
told `step not found` for a reference that names nothing."""

from collections.abc import Awaitable, Callable, Iterator

import anyio
import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from tests.e2e.mcp_agents import Agent, agents
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server

STEPS = [{"key": "rotate", "title": "Rotate refresh tokens"},
         {"key": "ui", "title": "Checkout UI"},
         {"key": "limit", "title": "Rate-limit POST /auth/refresh", "depends_on": ["ui"]}]


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


async def auth_refresh(agent: Agent) -> list[str]:
    made = await agent.ok("plans_create", plan="auth-refresh", title="Refresh", steps=STEPS)
    assert [s["ref"] for s in made["steps"]] == [
        "auth-refresh#1", "auth-refresh#2", "auth-refresh#3"]
    return [s["step_id"] for s in made["steps"]]


def test_an_agent_works_a_step_named_by_its_references(server: LiveServer) -> None:
    async def story(a: Agent) -> None:
        _, ui, limit = await auth_refresh(a)
        ready = await a.ok("tasks_ready", plan="auth-refresh")
        assert [s["ref"] for s in ready["ready"]] == ["auth-refresh#1", "auth-refresh#2"]
        blocked = await a.refused("tasks_claim", step_id="auth-refresh/limit")
        assert blocked == ('task blocked: step auth-refresh#3 "Rate-limit POST /auth/refresh" '
                           'waits on auth-refresh#2 "Checkout UI" (open)')
        claimed = await a.ok("tasks_claim", step_id="auth-refresh#2")
        assert (claimed["step_id"], claimed["ref"]) == (ui, "auth-refresh#2")
        renewed = await a.ok("tasks_claim", step_id="auth-refresh/ui")
        assert renewed["renewed"] is True
        noted = await a.ok("tasks_note", step_id="ui", text="done soon")
        assert noted["ref"] == "auth-refresh#2"
        done = await a.ok("tasks_complete", step_id="auth-refresh/ui",
                          fence=claimed["fence"])
        assert (done["step_id"], done["ref"], done["status"]) == (ui, "auth-refresh#2", "done")
        shown = await a.ok("tasks_list", step_id="auth-refresh#3")
        assert (shown["steps"][0]["step_id"], shown["steps"][0]["key"]) == (limit, "limit")
        nexts = await a.ok("tasks_claim_next", plan="auth-refresh")
        assert nexts["message"].startswith("claimed step auth-refresh#")

    run(server, story)


def test_tasks_add_takes_a_key_and_references_in_depends_on(server: LiveServer) -> None:
    async def story(a: Agent) -> None:
        rotate, ui, _ = await auth_refresh(a)
        added = await a.ok("tasks_add", plan="auth-refresh", title="Emit metrics",
                           key="alert", depends_on=["auth-refresh#1", "auth-refresh/ui"])
        assert (added["ref"], added["key"], added["depends_on"]) == (
            "auth-refresh#4", "alert", [rotate, ui])
        updated = await a.ok("tasks_update", step_id="auth-refresh/alert", title="Metrics",
                             add_depends_on=["auth-refresh#3"])
        assert (updated["title"], len(updated["depends_on"])) == ("Metrics", 3)
        taken = await a.refused("tasks_add", plan="auth-refresh", title="x", key="alert")
        assert "unique within its plan" in taken

    run(server, story)


@pytest.mark.parametrize("reference", ["auth-refresh#9", "auth-refresh#0", "nope#1",
                                       "auth-refresh/nope"])
def test_an_unknown_reference_is_step_not_found(server: LiveServer, reference: str) -> None:
    async def story(a: Agent) -> None:
        await auth_refresh(a)
        refused = await a.call("tasks_claim", step_id=reference)
        assert refused.is_error
        assert refused.structured_content is not None
        assert refused.structured_content["reason"] == "unknown_step"
        assert refused.structured_content["message"] == f'step not found: "{reference}"'

    run(server, story)


def test_a_bare_key_two_plans_share_is_refused_naming_both(server: LiveServer) -> None:
    async def story(a: Agent) -> None:
        await auth_refresh(a)
        await a.ok("plans_create", plan="billing", title="Billing", steps=STEPS)
        refused = await a.refused("tasks_claim", step_id="ui")
        assert refused == ('step reference "ui" is ambiguous: it names auth-refresh/ui, '
                           "billing/ui; give one of those")

    run(server, story)
