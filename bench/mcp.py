"""7. MCP: a `tasks_claim` tool call round trip, next to the HTTP claim.

One `planledger serve` process on an SQLite file; one client at a time, each claiming
steps nobody else claims: an MCP client (the official SDK over streamable HTTP at
`/mcp`, a connected session as Claude Code and Codex keep one) calling `tasks_claim`,
and an HTTP client posting `/api/steps/{id}/claim`. Beside them, the same SDK client
over stdio to a `planledger mcp` process on its own SQLite file (how an agent's client
runs a local MCP server). Rounds alternate the three; medians. The figures are each MCP
call's round trip against the HTTP claim's (lower is better; goal 1.5x, issue 19).

Beside it, what the figure is made of, each against the HTTP claim's own: an MCP `ping`
on the same connection (the SDK's client, transport and dispatch with no tool and no
ledger: the floor any tool call stands on), and the CPU each side spends per call (the
client's in this process, the server's from /proc), which a loaded machine blurs less
than round trips.
"""

import math
import os
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import Client, MCPDeprecationWarning, StdioServerParameters
from mcp.client.stdio import stdio_client

from planledger.bench.disk_full import cpu_seconds
from planledger.bench.servers import (
    PLANLEDGER,
    ROOMY,
    SECRET,
    Agent,
    Replica,
    create_plan,
    start_replica,
)
from planledger.bench.timing import Figure, scratch_dir

GOAL = 1.5  # an MCP claim's round trip against the HTTP claim's (issue 19)


@dataclass
class Calls:
    """Round trips of one kind of call, and the CPU both sides spent on them."""

    seconds: list[float] = field(default_factory=list)
    client_cpu: float = 0.0
    server_cpu: float = 0.0

    def timed(self, server: Replica) -> "_Timing":
        return _Timing(self, server)

    def cpu_ms(self, side: float) -> float:
        return side / max(len(self.seconds), 1) * 1000


class _Timing:
    """Adds the CPU spent inside the block, by this process and by the server, to `calls`."""

    def __init__(self, calls: Calls, server: Replica) -> None:
        self.calls, self.server = calls, server

    def __enter__(self) -> None:
        self.client, self.served = time.process_time(), _server_cpu(self.server)

    def __exit__(self, *_: object) -> None:
        self.calls.client_cpu += time.process_time() - self.client
        self.calls.server_cpu += _server_cpu(self.server) - self.served


def _server_cpu(server: Replica) -> float:
    try:
        return cpu_seconds(server.process.pid)
    except OSError:  # no /proc: the CPU figures read NaN
        return math.nan


async def _mcp_round_trips(server: Replica, steps: list[str], claims: Calls,
                           pings: Calls) -> None:
    async with Client(f"{server.url}/mcp", mode="legacy") as client:
        started = await client.call_tool("session_start", {"name": "mcp bench"})
        assert not started.is_error, started
        with claims.timed(server):
            for step in steps:
                began = time.perf_counter()
                result = await client.call_tool("tasks_claim", {"id": step})
                claims.seconds.append(time.perf_counter() - began)
                assert not result.is_error, result
        with warnings.catch_warnings():
            # Gone from the 2026-07-28 revision; the handshake-era sessions agents hold
            # (and this one) still have it.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            for _ in steps:
                began = time.perf_counter()
                await client.send_ping()
                pings.seconds.append(time.perf_counter() - began)


def mcp_round_trips(server: Replica, steps: list[str], claims: Calls, pings: Calls) -> None:
    anyio.run(_mcp_round_trips, server, steps, claims, pings)


async def _stdio_round_trips(db: str, rounds: int, per_round: int, claims: Calls,
                             between: Callable[[int], None]) -> None:
    """`tasks_claim` over stdio, one connection kept across the rounds; `between(r)` runs
    each round's HTTP claims before its MCP ones (in a worker thread: they run their own
    event loop), so the kinds alternate."""
    env = {**os.environ, "PLANLEDGER_SECRET": SECRET, **ROOMY}
    server = StdioServerParameters(command=PLANLEDGER, args=["mcp", "--db", db], env=env)
    async with Client(stdio_client(server)) as client:
        started = await client.call_tool("session_start", {"name": "mcp stdio bench"})
        assert not started.is_error, started
        for r in range(rounds):
            await anyio.to_thread.run_sync(between, r)
            made = await client.call_tool("plans_create", {
                "plan": f"stdio-{r}", "title": "stdio",
                "steps": [f"step {i}" for i in range(per_round)]})
            assert not made.is_error and made.structured_content is not None, made
            for step in made.structured_content["steps"]:
                began = time.perf_counter()
                result = await client.call_tool("tasks_claim", {"step_id": step["step_id"]})
                claims.seconds.append(time.perf_counter() - began)
                assert not result.is_error, result


def http_round_trips(server: Replica, steps: list[str], claims: Calls) -> None:
    agent = Agent(server, "http bench")
    try:
        with claims.timed(server):
            for step in steps:
                began = time.perf_counter()
                agent.claim(step).raise_for_status()
                claims.seconds.append(time.perf_counter() - began)
    finally:
        agent.close()


def run(smoke: bool = False) -> list[Figure]:
    per_round, rounds = (3, 1) if smoke else (100, 5)
    mcp, pings, http, stdio = Calls(), Calls(), Calls(), Calls()
    with scratch_dir("mcp") as directory:
        server = start_replica(str(directory / "ledger.sqlite"), ROOMY)

        def one_round(r: int) -> None:
            steps: list[Any] = create_plan(
                server, f"round-{r}", [{"title": f"step {i}"} for i in range(2 * per_round)])
            http_round_trips(server, steps[:per_round], http)
            mcp_round_trips(server, steps[per_round:], mcp, pings)

        try:
            anyio.run(_stdio_round_trips, str(directory / "local.sqlite"), rounds, per_round,
                      stdio, one_round)
        finally:
            server.stop()
    ms = 1000
    http_ms = statistics.median(http.seconds) * ms
    baseline = "HTTP claim round trip, same server"
    figures = [
        Figure("MCP tasks_claim round trip over streamable HTTP (`/mcp`), median",
               statistics.median(mcp.seconds) * ms, "ms", baseline, http_ms, goal=GOAL,
               lower_is_better=True, rounds=rounds),
        Figure("MCP tasks_claim round trip over stdio (`planledger mcp`), median",
               statistics.median(stdio.seconds) * ms, "ms",
               "HTTP claim round trip (to a server on its own file)", http_ms, goal=GOAL,
               lower_is_better=True, rounds=rounds),
        Figure("MCP ping round trip (the SDK's floor: no tool, no ledger), median",
               statistics.median(pings.seconds) * ms, "ms", baseline, http_ms,
               lower_is_better=True, rounds=rounds),
        Figure("MCP tasks_claim: the SDK client's CPU per call", mcp.cpu_ms(mcp.client_cpu),
               "ms", "the HTTP client's CPU per claim", http.cpu_ms(http.client_cpu),
               lower_is_better=True, rounds=rounds),
        Figure("MCP tasks_claim: the server's CPU per call", mcp.cpu_ms(mcp.server_cpu),
               "ms", "the server's CPU per HTTP claim", http.cpu_ms(http.server_cpu),
               lower_is_better=True, rounds=rounds),
    ]
    # The server's CPU counts in 10 ms ticks: a smoke run's few calls may not make one,
    # and without /proc there is none to read.
    return [f for f in figures if f.baseline and math.isfinite(f.value + f.baseline)]
