"""7. MCP: a `tasks_claim` tool call round trip, next to the HTTP claim on the same server.

One `planledger serve` process on an SQLite file; one client at a time, each claiming
steps nobody else claims: an MCP client (the official SDK over streamable HTTP at
`/mcp`, a connected session as Claude Code and Codex keep one) calling `tasks_claim`,
and an HTTP client posting `/api/steps/{id}/claim`. Rounds alternate the two; medians.
The figure is the MCP call's round trip against the HTTP claim's (lower is better).
"""

import statistics
import time
from typing import Any

import anyio
from mcp import Client

from planledger.bench.servers import ROOMY, Agent, Replica, create_plan, start_replica
from planledger.bench.timing import Figure, scratch_dir


async def _mcp_round_trips(server: Replica, steps: list[str]) -> list[float]:
    async with Client(f"{server.url}/mcp", mode="legacy") as client:
        started = await client.call_tool("session_start", {"name": "mcp bench"})
        assert not started.is_error, started
        costs = []
        for step in steps:
            began = time.perf_counter()
            result = await client.call_tool("tasks_claim", {"id": step})
            costs.append(time.perf_counter() - began)
            assert not result.is_error, result
        return costs


def mcp_round_trips(server: Replica, steps: list[str]) -> list[float]:
    costs: list[float] = anyio.run(_mcp_round_trips, server, steps)
    return costs


def http_round_trips(server: Replica, steps: list[str]) -> list[float]:
    agent = Agent(server, "http bench")
    try:
        costs = []
        for step in steps:
            began = time.perf_counter()
            agent.claim(step).raise_for_status()
            costs.append(time.perf_counter() - began)
        return costs
    finally:
        agent.close()


def run(smoke: bool = False) -> list[Figure]:
    per_round, rounds = (3, 1) if smoke else (100, 5)
    mcp: list[float] = []
    http: list[float] = []
    with scratch_dir("mcp") as directory:
        server = start_replica(str(directory / "ledger.sqlite"), ROOMY)
        try:
            for r in range(rounds):
                steps: list[Any] = create_plan(
                    server, f"round-{r}", [{"title": f"step {i}"} for i in range(2 * per_round)])
                http += http_round_trips(server, steps[:per_round])
                mcp += mcp_round_trips(server, steps[per_round:])
        finally:
            server.stop()
    ms = 1000
    return [Figure("MCP tasks_claim round trip, median", statistics.median(mcp) * ms, "ms",
                   "HTTP claim round trip, same server", statistics.median(http) * ms,
                   lower_is_better=True, rounds=rounds)]
