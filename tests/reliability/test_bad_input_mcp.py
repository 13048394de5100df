"""Bad input to the MCP tools, over streamable HTTP at /mcp of a real server, through the
official SDK client. Every tool, read from the server's own list, is called with each of
its arguments of the wrong type, huge, or full of unicode and control characters, with its
required arguments missing, and with an argument it does not take. Each refusal is a tool
error naming the argument; nothing is a protocol failure; the server keeps serving."""

from typing import Any

import anyio
import httpx

from tests.e2e.mcp_agents import Agent, agents, text
from tests.reliability.conftest import Served

HUGE = "x" * 1_000_000
ODD = "\u202e☃ e\u0301 \x00\x07\x1b[31m 👩\u200d💻"
WRONG: dict[str, list[Any]] = {
    "string": [12345, ["a"], {"a": 1}, True],
    "integer": ["soon", 1.5, ["1"], {"n": 1}],
    "array": ["not a list", 7, {"a": 1}],
    "object": ["not an object", [1]],
}


def _kinds(prop: dict[str, Any]) -> set[str]:
    options = prop.get("anyOf", [prop])
    return {o["type"] for o in options if "type" in o} - {"null"}


def _cases(schema: dict[str, Any], good: dict[str, Any],
           ) -> list[tuple[str, dict[str, Any], str | None]]:
    """(what, arguments, the name the refusal must carry; None: refusing is optional).
    Each bad argument comes with good values for the tool's other required arguments, so
    the refusal is about it."""
    props: dict[str, Any] = schema.get("properties", {})
    required = schema.get("required", [])
    base = {name: good.get(name, "a") for name in required}
    base |= {name: good["plan"] for name in ("plan",) if name in props}  # (several move)
    cases: list[tuple[str, dict[str, Any], str | None]] = [
        ("an argument it does not take", {**base, "fence_typo": 1}, "fence_typo")]
    if required:
        cases.append(("its required arguments missing", {}, required[0]))
    for name, prop in props.items():
        for kind in _kinds(prop):
            cases += [(f"{name} as {type(v).__name__}", {**base, name: v}, name)
                      for v in WRONG.get(kind, [])]
        if "string" in _kinds(prop):
            cases += [(f"{name} huge", {**base, name: HUGE}, name),
                      (f"{name} odd characters", {**base, name: ODD}, None)]
    return cases


async def _barrage(agent: Agent, good: dict[str, Any]) -> int:
    sent = 0
    for tool in (await agent.client.list_tools()).tools:
        for what, arguments, named in _cases(tool.input_schema, good):
            result = await agent.client.call_tool(tool.name, arguments)
            sent += 1
            if named is not None or result.is_error:
                assert result.is_error, (tool.name, what, text(result)[:300])
                message = text(result)
                assert message and "Traceback" not in message, (tool.name, what)
                if named is not None:
                    assert _names(message, named), (tool.name, what, message[:300])
    return sent


def _names(message: str, argument: str) -> bool:
    """The refusal names the argument (the ledger says `title`, `body`, `slug`, ... for
    the fields it checks itself; an id it cannot find is named by its value)."""
    return argument in message or (argument == "step_id" and "step" in message)


def test_every_tool_refuses_bad_arguments_by_name_and_the_server_keeps_serving(
    served: Served,
) -> None:
    steps = served.plan("mcp-fuzzed", 2)
    good = {"plan": "mcp-fuzzed", "slug": "mcp-fuzzed", "step_id": steps[0], "title": "t",
            "verdict": "approve"}

    async def run() -> int:
        async with agents([f"{served.url}/mcp"]) as (agent,):
            await agent.start()
            sent = await _barrage(agent, good)
            shown = await agent.ok("plans_show", plan="mcp-fuzzed")
            assert shown["slug"] == "mcp-fuzzed"
            return sent

    sent = anyio.run(run)
    print(f"{sent} bad MCP calls")  # the figure for the README's report (pytest -s)
    assert sent >= 200
    assert httpx.get(f"{served.url}/healthz", timeout=10).status_code == 200
