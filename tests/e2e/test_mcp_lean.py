"""Lean step answers over MCP, on a real `planledger serve` process through the official SDK
client: a step leaves out what is empty (keeping `id` beside `step_id`, which agents from
other task queues read), the tools' output schemas say so (the SDK client validates every
answer against them), and HTTP keeps its whole shape."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from planledger.bench.servers import Replica, start_replica
from tests.e2e.mcp_agents import agents, text


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replica]:
    replica = start_replica(str(Path(tmp_path_factory.mktemp("mcp-lean")) / "l.sqlite"))
    yield replica
    replica.stop()


def lean(step: dict[str, Any]) -> dict[str, Any]:
    """A step as HTTP answers it, with what MCP leaves out left out."""
    return {k: v for k, v in step.items()
            if v not in (None, [], {}) and not (k == "body" and v == "")}


def test_steps_over_mcp_leave_out_what_is_empty_and_http_keeps_every_field(
    server: Replica,
) -> None:
    async def story() -> tuple[list[Any], dict[str, Any], dict[str, Any], str]:
        async with agents([f"{server.url}/mcp"]) as (a,):
            await a.start()
            made = await a.ok("plans_create", slug="lean", title="Lean", steps=[
                {"key": "root", "title": "Root", "body": "Lay it down"},
                {"title": "Paths", "paths": ["src/**"]},
                {"title": "Waits", "depends_on": ["root"]}])
            held = await a.ok("tasks_claim", step_id=made["steps"][1]["step_id"])
            shown = await a.call("plans_show", plan="lean")
            assert shown.structured_content is not None
            return made["steps"], held, shown.structured_content, text(shown)

    made, held, shown, words = anyio.run(story)
    over_http = httpx.get(f"{server.url}/api/plans/lean", timeout=30).json()

    root = over_http["steps"][0]
    assert (root["id"], root["holder"], root["paths"], root["blockers"]) == (
        root["step_id"], None, [], [])  # HTTP: the same shape as ever
    assert [lean(s) for s in over_http["steps"]] == shown["steps"]
    assert all(s["id"] == s["step_id"] for s in [*made, held, *shown["steps"]])
    first, second, third = shown["steps"]
    assert "holder" not in first and "paths" not in first and first["body"] == "Lay it down"
    assert (second["holder"], second["reserved"]) == (held["holder"], held["paths"])
    assert third["blockers"][0]["ref"] == "lean#1" and "expires_at" not in third
    assert '"holder":null' not in words and '"paths":[]' not in words


def test_output_schemas_require_only_what_every_step_carries(
    server: Replica,
) -> None:
    async def listing() -> dict[str, Any]:
        async with agents([f"{server.url}/mcp"]) as (a,):
            tools = (await a.client.list_tools()).tools
        return {t.name: t.output_schema for t in tools}

    schemas = anyio.run(listing)
    step = schemas["plans_show"]["$defs"]["StepOut"]
    assert "id" in step["properties"] and step["additionalProperties"] is False
    assert set(step["required"]) == {"step_id", "plan", "position", "title", "status",
                                     "claimable", "fence"}
    assert "left out" in step["description"]
    claim = schemas["tasks_claim"]
    assert "id" in claim["properties"]
    assert {"paths", "notes", "took_over_from", "warnings"}.isdisjoint(claim["required"])
    assert {"step_id", "holder", "fence", "expires_at", "renewed"} <= set(claim["required"])
    # What is no step keeps its shape: a plan's page still requires its steps.
    assert "steps" in schemas["plans_show"]["required"]
