"""Access keys over MCP, through the official SDK client on a real `planledger serve`: the
key travels in the connection's `Authorization` header, a session started on it takes the
key's role, a refusal is a tool error naming the role needed, and `planledger mcp --url`
relays PLANLEDGER_KEY."""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from planledger.api.access import new_key
from planledger.api.runtime import open_runtime
from planledger.bench.servers import Replica, start_replica
from planledger.ledger import commands as c
from planledger.ledger.domain.access import Role, digest_of
from tests.e2e.mcp_agents import Agent, seeded_store
from tests.e2e.test_cli_server import PLANLEDGER
from tests.support import OPERATOR


def issue_keys(db: str, roles: dict[str, Role]) -> dict[str, str]:
    runtime = open_runtime(db)
    try:
        made = {}
        for name, role in roles.items():
            made[name] = new_key()
            runtime.ledger.execute(c.IssueKey(name, role, digest_of(made[name]), OPERATOR))
        return made
    finally:
        runtime.close()


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Replica, dict[str, str]]]:
    db = str(Path(tmp_path_factory.mktemp("mcp-keys")) / "ledger.sqlite")
    seeded_store(db)
    keys = issue_keys(db, {"dash": "reader", "bot": "worker", "lead": "planner"})
    replica = start_replica(db)
    yield replica, keys
    replica.stop()


async def as_key(url: str, key: str | None, work: Any) -> Any:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers) as http, Client(
            streamable_http_client(url, http_client=http), mode="legacy") as client:
        return await work(Agent(client, "agent"))


def test_a_connection_without_a_key_is_refused(keyed: tuple[Replica, dict[str, str]]) -> None:
    replica, _ = keyed
    answered = httpx.post(f"{replica.url}/mcp", json={"jsonrpc": "2.0", "id": 1,
                                                       "method": "initialize", "params": {}})
    assert answered.status_code == 401 and answered.json()["reason"] == "unauthorized"


def test_a_session_takes_the_role_of_the_connections_key(
        keyed: tuple[Replica, dict[str, str]]) -> None:
    replica, keys = keyed

    async def work(agent: Agent) -> tuple[dict[str, Any], Any]:
        started = await agent.start()
        refused = await agent.call("plans_create", slug="mine", title="Mine", steps=["x"])
        return started, refused

    started, refused = anyio.run(as_key, f"{replica.url}/mcp", keys["bot"], work)
    assert (started["session_id"] != "", refused.is_error) == (True, True)
    assert refused.structured_content["reason"] == "forbidden"
    assert (refused.structured_content["needs"], refused.structured_content["role"]) == (
        "planner", "worker")


def test_a_planner_key_creates_a_plan_and_a_reader_key_starts_no_session(
        keyed: tuple[Replica, dict[str, str]]) -> None:
    replica, keys = keyed

    async def plan(agent: Agent) -> dict[str, Any]:
        await agent.start()
        return await agent.ok("plans_create", slug="by-lead", title="Lead's", steps=["a"])

    async def read(agent: Agent) -> tuple[Any, Any]:
        return (await agent.call("session_start", name="dash"),
                await agent.call("plans_list"))

    assert anyio.run(as_key, f"{replica.url}/mcp", keys["lead"], plan)["slug"] == "by-lead"
    refused, listed = anyio.run(as_key, f"{replica.url}/mcp", keys["dash"], read)
    assert refused.is_error and refused.structured_content["needs"] == "worker"
    assert not listed.is_error


def test_the_stdio_relay_sends_planledger_key(keyed: tuple[Replica, dict[str, str]]) -> None:
    replica, keys = keyed
    relay = StdioServerParameters(command=PLANLEDGER, args=["mcp", "--url", replica.url],
                                  env={**os.environ, "PLANLEDGER_KEY": keys["bot"]})

    async def work() -> dict[str, Any]:
        async with Client(relay, mode="legacy") as client:
            return await Agent(client, "relayed").start()

    started = anyio.run(work)
    assert started["session_id"]
    shown = httpx.get(f"{replica.url}/api/sessions/{started['session_id']}",
                      headers={"Authorization": f"Bearer {keys['dash']}"}).json()
    assert (shown["role"], shown["key"]) == ("worker", "bot")
