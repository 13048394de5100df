"""tasks_claim_next with `wait_seconds`, through the official MCP SDK client over streamable
HTTP: a waiting call claims the step a completion frees, more calls wait than the server
has worker threads while other agents' calls are answered, and the bound is refused
naming the argument. The server runs in this process (a real socket) so the test can
watch its line of waiters instead of sleeping."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.api.service import Service
from planledger.ledger.commands import MAX_WAIT_SECONDS
from tests.e2e.mcp_agents import Agent, agents, together
from tests.support.live_server import LiveServer, live_server

PLAN = "waiting"
WAITERS = 44  # more than anyio's 40 worker threads


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    runtime: Runtime = open_runtime(str(tmp_path / "ledger.sqlite"))
    try:
        with live_server(runtime, lifespan="on") as served:
            yield served
    finally:
        runtime.close()


def queued(server: LiveServer, count: int) -> Any:
    """Awaitable: true once `count` calls wait in the plan's line."""
    service: Service = server.app.state.service
    return anyio.to_thread.run_sync(service.waiting.waiting, PLAN, count)


def test_a_waiting_claim_next_claims_the_step_a_completion_frees(server: LiveServer) -> None:
    async def story() -> tuple[dict[str, Any], str]:
        async with agents([f"{server.url}/mcp"] * 2) as (holder, waiter):
            await together(holder.start(), waiter.start())
            made = await holder.ok("plans_create", slug=PLAN, title="Waiting", steps=[
                {"key": "a", "title": "first"}, {"title": "second", "depends_on": ["a"]}])
            first, second = (s["step_id"] for s in made["steps"])
            await holder.ok("tasks_claim", step_id=first)

            async def complete_once_waiting() -> None:
                assert await queued(server, 1), "the call never waited"
                await holder.ok("tasks_complete", step_id=first)

            answer: dict[str, Any] = {}

            async def claim_next() -> None:
                answer.update(await waiter.ok("tasks_claim_next", plan=PLAN, wait_seconds=60))

            await together(claim_next(), complete_once_waiting())
            return answer, str(second)

    answer, second = anyio.run(story)
    assert answer["claimed"]["step_id"] == second
    assert answer["progress"] == "1/2 done, 0 claimable, 1 in flight"


def test_more_calls_wait_than_worker_threads_and_other_agents_are_still_answered(
    server: LiveServer,
) -> None:
    async def crowd() -> tuple[list[dict[str, Any]], list[str]]:
        async with agents([f"{server.url}/mcp"] * (WAITERS + 1)) as crew:
            holder, waiters = crew[0], crew[1:]
            await together(*(agent.start() for agent in crew))
            made = await holder.ok("plans_create", slug=PLAN, title="Waiting",
                                   steps=[f"step {i}" for i in range(WAITERS)])
            steps = [s["step_id"] for s in made["steps"]]
            for step_id in steps:
                await holder.ok("tasks_claim", step_id=step_id)

            async def release_all_once_waiting() -> None:
                assert await queued(server, WAITERS), "the calls never all waited"
                listed = await holder.ok("tasks_ready", plan=PLAN)  # answered meanwhile
                assert listed["ready"] == []
                await holder.ok("session_end")

            answers: list[dict[str, Any]] = []
            await together(*(_wait(agent, answers) for agent in waiters),
                           release_all_once_waiting())
            return answers, steps

    answers, steps = anyio.run(crowd)
    assert sorted(a["claimed"]["step_id"] for a in answers) == sorted(steps)


async def _wait(agent: Agent, answers: list[dict[str, Any]]) -> None:
    answers.append(await agent.ok("tasks_claim_next", plan=PLAN, wait_seconds=60))


def test_wait_seconds_is_a_bounded_integer_and_above_the_bound_is_refused_naming_it(
    server: LiveServer,
) -> None:
    async def bounds() -> tuple[dict[str, Any], str]:
        async with agents([f"{server.url}/mcp"]) as (agent,):
            tools = {t.name: t for t in (await agent.client.list_tools()).tools}
            await agent.start()
            await agent.ok("plans_create", slug=PLAN, title="Waiting", steps=["only"])
            refused = await agent.refused("tasks_claim_next", plan=PLAN,
                                          wait_seconds=MAX_WAIT_SECONDS + 1)
            return tools["tasks_claim_next"].input_schema["properties"], refused

    properties, refused = anyio.run(bounds)
    wait = properties["wait_seconds"]
    assert (wait["type"], wait["minimum"], wait["maximum"]) == ("integer", 0, MAX_WAIT_SECONDS)
    assert "wait_seconds" in refused and str(MAX_WAIT_SECONDS) in refused
