"""Over MCP, another client's `Mcp-Session-Id` header acts for nobody: the attack of
tests/reliability/test_mcp_acting_session.py made with the official SDK clients against a
real `planledger serve`. The victim keeps a handshake-era connection (as Claude Code and
Codex do); the attacker speaks the stateless protocol (2026-07-28) and adds the victim's
header to every request."""

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from planledger.bench.servers import Replica, start_replica
from tests.e2e.mcp_agents import Agent

SESSION_HEADER = "mcp-session-id"
STATELESS = "2026-07-28"
SLUG = "sdk-acting"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replica]:
    replica = start_replica(str(Path(tmp_path_factory.mktemp("mcp-acting")) / "ledger.sqlite"))
    yield replica
    replica.stop()


@asynccontextmanager
async def victim_connection(url: str) -> AsyncIterator[tuple[Agent, list[str]]]:
    """A handshake-era SDK client, and the `Mcp-Session-Id` the server gave it (read off
    its responses, as anyone on the path could)."""
    seen: list[str] = []

    async def note(response: httpx2.Response) -> None:
        if SESSION_HEADER in response.headers and not seen:
            seen.append(response.headers[SESSION_HEADER])

    async with httpx2.AsyncClient(timeout=30, event_hooks={"response": [note]}) as http, \
            Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        yield Agent(client, "victim"), seen


@asynccontextmanager
async def attacker_sending(url: str, header: str) -> AsyncIterator[Agent]:
    """A stateless SDK client that adds `header` as its Mcp-Session-Id to every request."""
    async with httpx2.AsyncClient(timeout=30, headers={SESSION_HEADER: header}) as http, \
            Client(streamable_http_client(url, http_client=http), mode=STATELESS) as client:
        yield Agent(client, "attacker")


def test_a_stateless_sdk_client_with_the_victims_session_header_acts_for_nobody(
    server: Replica,
) -> None:
    url = f"{server.url}/mcp"

    async def attack() -> None:
        async with victim_connection(url) as (victim, seen):
            await victim.start()
            made = await victim.ok("plans_create", slug=SLUG, title=SLUG,
                                   steps=["first", "second", "third"])
            first, second, third = (s["step_id"] for s in made["steps"])
            claimed = await victim.ok("tasks_claim", id=first)
            header = seen[0]

            async with attacker_sending(url, header) as attacker:
                for tool in ("tasks_complete", "tasks_release"):
                    refusal = await attacker.refused(tool, id=first)
                    assert refusal.startswith("no session"), (tool, refusal)
                await attacker.refused("tasks_drop", id=first)
                assert (await attacker.refused("tasks_claim", id=second)).startswith(
                    "no session")
                squatter = await attacker.ok("session_start", name="squatter")
                assert "pass token on every call" in squatter["briefing"]

            took = await victim.ok("tasks_claim_next", plan=SLUG)  # not ambiguous_session
            assert took["claimed"]["step_id"] == second
            assert took["claimed"]["holder"] == victim.session_id
            done = await victim.ok("tasks_complete", id=first, fence=claimed["fence"])
            assert done["status"] == "done"
        # the victim's client has ended its MCP session (DELETE /mcp) on the way out
        async with attacker_sending(url, header) as attacker:
            refusal = await attacker.refused("tasks_release", id=second)
            assert refusal.startswith("no session"), refusal
            assert (await attacker.refused("tasks_claim", id=third)).startswith("no session")
            shown = await attacker.ok("plans_show", slug=SLUG)
            assert [(s["status"], s.get("holder")) for s in shown["steps"]] == [
                ("done", None), ("in_progress", victim.session_id), ("open", None)]

    anyio.run(attack)
