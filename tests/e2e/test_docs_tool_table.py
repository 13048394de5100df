"""The pages that list the MCP tools against the tools a real `planledger serve` lists over
MCP: the generated reference (docs/reference/mcp.md) has a section for every tool, and a
hand-written tool table (`| tool | what |`, in the README or any docs page) has every tool,
each row naming the tool's arguments as its schema has them (`name?` for an optional one).
`session_id` and `token`, which every acting tool takes, are left out of the rows: the
prose beside the table says when to pass them."""

import re
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from planledger.bench.servers import Replica, start_replica
from tests.e2e.mcp_agents import agents

ROOT = Path(__file__).resolve().parents[2]
ON_EVERY_TOOL = {"session_id", "token"}
CALL = re.compile(r"`(?P<name>[a-z_]+)\((?P<args>[^)]*)\)`")


def tool_tables() -> dict[str, dict[str, list[str]]]:
    """Each page's tool table: tool name -> its arguments as the row writes them."""
    docs = ROOT / "docs"
    found = {}
    for page in [ROOT / "README.md", *sorted(docs.rglob("*.md") if docs.is_dir() else [])]:
        lines = page.read_text(encoding="utf-8").splitlines()
        if "| tool | what |" not in lines:
            continue
        rows = lines[lines.index("| tool | what |") + 2:]
        table: dict[str, list[str]] = {}
        for row in rows[: next((i for i, r in enumerate(rows) if not r.startswith("|")),
                               len(rows))]:
            for call in CALL.finditer(row.split(" | ")[0]):
                table[call["name"]] = [a.strip() for a in call["args"].split(",") if a.strip()]
        found[str(page.relative_to(ROOT))] = table
    return found


@pytest.fixture(scope="module")
def listed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[str]]]:
    """The tools the server lists: name -> arguments written as a row writes them."""
    replica: Replica = start_replica(str(tmp_path_factory.mktemp("tools") / "t.sqlite"))

    async def listing() -> dict[str, list[str]]:
        async with agents([f"{replica.url}/mcp"]) as (agent,):
            tools = (await agent.client.list_tools()).tools
        return {t.name: sorted(
            name if name in t.input_schema.get("required", []) else f"{name}?"
            for name in t.input_schema.get("properties", {}) if name not in ON_EVERY_TOOL)
            for t in tools}

    try:
        yield anyio.run(listing)
    finally:
        replica.stop()


def test_the_mcp_reference_has_a_section_for_every_tool(listed: dict[str, list[str]]) -> None:
    page = ROOT / "docs" / "reference" / "mcp.md"
    if not page.exists():
        pytest.skip("no generated MCP reference: the README's tool table stands for it")
    sections = re.findall(r"^## `([a-z_]+)`$", page.read_text(encoding="utf-8"), re.M)
    assert sorted(sections) == sorted(listed)


def test_some_page_lists_the_tools() -> None:
    assert tool_tables() or (ROOT / "docs" / "reference" / "mcp.md").exists()


def test_every_tool_table_lists_every_tool_with_its_arguments(
    listed: dict[str, list[str]],
) -> None:
    for page, table in tool_tables().items():
        assert sorted(table) == sorted(listed), (
            f"{page}: missing {sorted(set(listed) - set(table))}, "
            f"not a tool {sorted(set(table) - set(listed))}")
        for name, arguments in table.items():
            assert sorted(arguments) == listed[name], f"{page}: {name}"
