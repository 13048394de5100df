"""The MCP tools over stdio, `planledger mcp` started as its clients start it, through the
official SDK client: agent A's process works on the embedded SQLite store, agent B's is
relayed (`--url`) to a `planledger serve` on that same store."""

import os
from pathlib import Path

import anyio
from mcp import StdioServerParameters

from planledger.bench.servers import PLANLEDGER, start_replica
from tests.e2e.mcp_agents import (
    agents,
    ready_listings,
    replay_seed_story,
    seeded_store,
)


def stdio(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=PLANLEDGER, args=["mcp", *args], env=dict(os.environ))


def test_two_stdio_agents_replay_the_seed_story_embedded_and_relayed_to_a_server(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "ledger.sqlite")
    step5, step6 = seeded_store(db)[4:]
    server = start_replica(db)

    async def story() -> list[str]:
        targets = [stdio("--db", db), stdio("--url", server.url)]
        async with agents(targets, ["auto", "auto"]) as (a, b):
            a.pass_token = b.pass_token = False  # the process is the connection
            await replay_seed_story(a, b)
            return [a.session_id, b.session_id]

    try:
        sessions = anyio.run(story)
    finally:
        server.stop()
    listed = ready_listings(db)
    assert [listed[s] for s in sessions] == [[[step5, step6]]] * 2
