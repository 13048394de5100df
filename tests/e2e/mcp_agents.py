"""Agents for the MCP end-to-end tests: the official SDK client over a real transport,
and the seed's two-agent story as both transports replay it."""

from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from planledger.api import reads
from planledger.api.runtime import open_runtime
from tests.support.seed import AUTH_REFRESH_STEPS, PLAN, seed_auth_refresh

RATE_LIMIT, METRICS = AUTH_REFRESH_STEPS[4], AUTH_REFRESH_STEPS[5]
ALL_DONE = "6/6 done, 0 claimable, 0 in flight"
T = TypeVar("T")
Target = str | StdioServerParameters


def seeded_store(db: str) -> list[str]:
    """The seed's plan in a fresh SQLite store (steps 1-4 done); its six step ids."""
    runtime = open_runtime(db)
    try:
        return list(seed_auth_refresh(runtime.ledger))
    finally:
        runtime.close()


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


@dataclass
class Agent:
    """One MCP client acting for the session it starts. `pass_token`: a client that keeps
    no connection (protocol 2026-07-28) sends its token on every call."""

    client: Client
    name: str
    pass_token: bool = False
    session_id: str = ""
    token: str = ""

    async def call(self, tool: str, **arguments: Any) -> CallToolResult:
        if self.pass_token and self.token:
            arguments.setdefault("token", self.token)
        return await self.client.call_tool(tool, arguments)

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.call(tool, **arguments)
        assert not result.is_error, f"{self.name}: {tool} failed: {text(result)}"
        assert result.structured_content is not None
        return result.structured_content

    async def refused(self, tool: str, **arguments: Any) -> str:
        result = await self.call(tool, **arguments)
        assert result.is_error, f"{self.name}: {tool} should have been refused"
        return text(result)

    async def start(self) -> dict[str, Any]:
        started = await self.ok("session_start", name=self.name)
        self.session_id, self.token = started["session_id"], started["token"]
        return started


@asynccontextmanager
async def agents(targets: Sequence[Target], modes: Sequence[str] | None = None,
                 ) -> AsyncIterator[list[Agent]]:
    """One connected agent per target (`modes`: the SDK's connect mode of each; "legacy"
    is the handshake era that Claude Code and Codex speak, "auto" negotiates 2026-07-28)."""
    modes = modes or ["legacy"] * len(targets)
    async with AsyncExitStack() as stack:
        found = []
        for i, (target, mode) in enumerate(zip(targets, modes, strict=True)):
            client = await stack.enter_async_context(Client(target, mode=mode))
            found.append(Agent(client, f"agent {chr(ord('A') + i)}", pass_token=mode != "legacy"))
        yield found


async def together(*calls: Awaitable[T]) -> list[T]:
    """Run the calls at the same moment; their answers in order."""
    answers: list[Any] = [None] * len(calls)

    async def run(i: int, call: Awaitable[T]) -> None:
        answers[i] = await call

    async with anyio.create_task_group() as group:
        for i, call in enumerate(calls):
            group.start_soon(run, i, call)
    return answers


async def replay_seed_story(a: Agent, b: Agent) -> tuple[Agent, Agent]:
    """Both list ready, both claim step 5 at once: exactly one lands, the other's error
    names the winner and it claims step 6; both complete; the plan reads 6/6. Returns
    (winner, loser)."""
    for agent in (a, b):
        briefing = (await agent.start())["briefing"]
        assert f"{PLAN} " in briefing and "rate-limit-not-in-memory" in briefing
    seen = await together(a.ok("tasks_ready", plan=PLAN), b.ok("tasks_ready", plan=PLAN))
    assert [[s["title"] for s in r["ready"]] for r in seen] == [[RATE_LIMIT, METRICS]] * 2
    step5, step6 = (s["step_id"] for s in seen[0]["ready"])

    claims = await together(a.call("tasks_claim", id=step5), b.call("tasks_claim", id=step5))
    assert sorted(c.is_error for c in claims) == [False, True], [text(c) for c in claims]
    winner, loser = (a, b) if not claims[0].is_error else (b, a)
    bounce = text(claims[1] if winner is a else claims[0])
    assert bounce.startswith(f'task already claimed: held by "{winner.session_id}"'), bounce
    refused = claims[1] if winner is a else claims[0]
    assert f"(step {PLAN}#5 " in bounce  # named by reference; the facts carry the id
    assert refused.structured_content is not None
    assert refused.structured_content["step_id"] == step5

    pivot = await loser.ok("tasks_claim", id=step6)
    assert (pivot["holder"], pivot["title"]) == (loser.session_id, METRICS)
    done = await together(winner.ok("tasks_complete", id=step5),
                          loser.ok("tasks_complete", id=step6, fence=pivot["fence"]))
    assert [d["status"] for d in done] == ["done", "done"]
    assert (await a.ok("plans_show", slug=PLAN))["progress"]["line"] == ALL_DONE
    return winner, loser


def ready_listings(db: str) -> dict[str, list[list[str]]]:
    """Each session's recorded ready listings (ReadyListed events), read from the store."""
    runtime = open_runtime(db)
    try:
        page = reads.log_page(runtime, 0, 1000)
    finally:
        runtime.close()
    listed: dict[str, list[list[str]]] = {}
    for event in page.events:
        if event.type == "ReadyListed":
            listed.setdefault(event.stream, []).append(event.data["step_ids"])
    return listed
