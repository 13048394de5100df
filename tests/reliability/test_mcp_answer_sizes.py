"""Answers sized for an agent's context: on a 10,000-step plan, `tasks_ready` and
`plans_show` answer a few KB by default (the first steps, lean, and counts of the rest), and
paging through `plans_show` and `tasks_list` returns every step exactly once."""

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from planledger.bench.servers import Replica, author_at, start_replica
from tests.e2e.mcp_agents import Agent, agents, text

STEPS = 10_000


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Replica, list[str]]]:
    db = str(tmp_path_factory.mktemp("sizes") / "ledger.sqlite")
    server = start_replica(db, {"PLANLEDGER_MAX_STEPS_PER_REQUEST": str(STEPS)})
    # A third of the steps wait on the first, so the plan has ready and blocked steps.
    steps: list[dict[str, object]] = [{"key": "root", "title": "root step"}]
    steps += [{"title": f"step {i}", "depends_on": ["root"] if i % 3 == 0 else []}
              for i in range(1, STEPS)]
    try:
        made = httpx.post(f"{server.url}/api/plans", headers=author_at(server.url),
                          timeout=600, json={"slug": "huge", "title": "huge", "steps": steps})
        made.raise_for_status()
        yield server, [str(s["step_id"]) for s in made.json()["steps"]]
    finally:
        server.stop()


def _run(server: Replica, body: Any) -> Any:
    async def go() -> Any:
        async with agents([f"{server.url}/mcp"]) as (agent,):
            await agent.start()
            return await body(agent)
    return anyio.run(go)


def test_ready_and_show_answer_a_few_kilobytes_and_count_the_rest(
    big: tuple[Replica, list[str]],
) -> None:
    server, ids = big

    async def calls(agent: Agent) -> tuple[Any, ...]:
        await agent.ok("tasks_claim", step_id=ids[1])
        ready = await agent.call("tasks_ready", plan="huge")
        shown = await agent.call("plans_show", plan="huge")
        return ready, shown

    ready, shown = _run(server, calls)
    ready_text, shown_text = text(ready), text(shown)
    print(f"tasks_ready {len(ready_text):,} bytes, plans_show {len(shown_text):,} bytes "
          f"on a {STEPS:,}-step plan")
    # Over MCP a step leaves out what is empty (api.mcp.lean): 5,844 and 12,577 bytes
    # when measured, from ~8,400 and ~20,000.
    assert len(ready_text) < 6_500 and len(shown_text) < 14_000
    answer = ready.structured_content
    assert len(answer["ready"]) == 10 and answer["ready_total"] == STEPS - STEPS // 3 - 1
    assert answer["held_total"] == 1 and answer["blocked_total"] == STEPS // 3
    assert answer["held"][0]["step_id"] == ids[1]
    assert shown.structured_content["more"] == STEPS - 50


def test_paging_returns_every_step_exactly_once(big: tuple[Replica, list[str]]) -> None:
    server, ids = big

    async def pages(agent: Agent) -> tuple[list[str], list[str]]:
        shown: list[str] = []
        listed: list[str] = []
        after, more = -1, 1
        while more:
            page = await agent.ok("plans_show", plan="huge", limit=1000, after=after)
            shown += [s["step_id"] for s in page["steps"]]
            after, more = page["next_after"], page["more"]
        after, more = -1, 1
        while more:
            page = await agent.ok("tasks_list", plan="huge", limit=1000, after=after)
            listed += [s["step_id"] for s in page["steps"]]
            after, more = page["next_after"], page["more"]
        return shown, listed

    shown, listed = _run(server, pages)
    assert shown == ids and listed == ids
