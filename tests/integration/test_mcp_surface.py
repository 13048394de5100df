"""What a client sees of the MCP server besides the tools: the capabilities it offers, the
empty lists of resources and prompts, and the answers to a name it does not know. The SDK's
client talks to the server in-process, in both protocol eras."""

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.request_state import RequestStateBoundary
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, TextContent

from planledger.api.identity import Identity
from planledger.api.mcp.handshake import CAPABILITIES
from planledger.api.mcp.server import build_server
from planledger.api.runtime import Runtime
from planledger.api.service import Key, Service
from planledger.api.settings import Settings
from planledger.ledger import commands as c

MODES = ["legacy", "2026-07-28"]


class CrashingService(Service):
    """A service whose sessions cannot start, for a reason no client should read."""

    def start_session(self, command: c.StartSession, key: Key = None) -> Any:
        raise RuntimeError("the disk at /srv/secret is on fire")


def served(rt: Runtime, mode: str, talk: Callable[[Client], Awaitable[Any]],
           service_type: type[Service] = Service) -> Any:
    service = service_type(rt, Settings(db=rt.db), Identity(rt.secret, None))

    async def run() -> Any:
        async with Client(build_server(service, single_connection=True), mode=mode) as client:
            return await talk(client)

    return anyio.run(run)


def test_the_handshake_offers_tools_and_empty_resources_and_prompts(rt: Runtime) -> None:
    async def capabilities(client: Client) -> Any:
        return client.server_capabilities.model_dump(by_alias=True, exclude_none=True)

    assert served(rt, "legacy", capabilities) == CAPABILITIES


@pytest.mark.parametrize("mode", MODES)
def test_resources_and_prompts_are_listed_empty(rt: Runtime, mode: str) -> None:
    async def lists(client: Client) -> list[Any]:
        return [(await client.list_resources()).resources,
                (await client.list_resource_templates()).resource_templates,
                (await client.list_prompts()).prompts]

    assert served(rt, mode, lists) == [[], [], []]


def test_an_unknown_resource_or_prompt_is_a_protocol_error_naming_it(rt: Runtime) -> None:
    async def unknown(client: Client) -> list[tuple[int, str, Any]]:
        errors = []
        for ask in (client.read_resource("file:///nothing"), client.get_prompt("nothing")):
            with pytest.raises(MCPError) as raised:
                await ask
            errors.append((raised.value.error.code, raised.value.error.message,
                           raised.value.error.data))
        return errors

    assert served(rt, "legacy", unknown) == [
        (INVALID_PARAMS, "Unknown resource: file:///nothing", {"uri": "file:///nothing"}),
        (0, "Unknown prompt: nothing", None)]


@pytest.mark.parametrize("mode", MODES)
def test_an_unknown_tool_is_a_tool_error_naming_it(rt: Runtime, mode: str) -> None:
    async def call(client: Client) -> Any:
        return await client.call_tool("tasks_nothing", {})

    result = served(rt, mode, call)
    assert result.is_error and result.structured_content is None
    assert result.content == [TextContent(type="text", text="Unknown tool: tasks_nothing")]


def test_an_unexpected_failure_is_logged_and_answered_without_its_detail(
    rt: Runtime, caplog: pytest.LogCaptureFixture,
) -> None:
    async def call(client: Client) -> Any:
        return await client.call_tool("session_start", {"name": "a"})

    with caplog.at_level(logging.INFO):
        result = served(rt, "legacy", call, CrashingService)
    assert result.is_error and result.structured_content is None
    assert result.content == [TextContent(type="text",
                                          text="Error executing tool session_start")]
    logged = [r for r in caplog.records if r.exc_info and r.levelno >= logging.ERROR]
    assert len(logged) == 1 and "on fire" in str(logged[0].exc_info[1].__cause__), logged


def test_a_request_state_the_server_did_not_seal_is_refused(rt: Runtime) -> None:
    async def call(client: Client) -> Any:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("plans_list", {}, request_state="forged")
        return raised.value.error.code, raised.value.error.message

    assert served(rt, "legacy", call) == (INVALID_PARAMS, "Invalid or expired requestState")


def test_every_message_passes_only_the_request_state_boundary(rt: Runtime) -> None:
    """The SDK's OpenTelemetry span around each message is left out: nothing here installs
    an exporter, and its set-up was a few percent of every tool call."""
    server = build_server(Service(rt, Settings(db=rt.db), Identity(rt.secret, None)),
                          single_connection=True)
    assert [type(m) for m in server.middleware] == [RequestStateBoundary]
