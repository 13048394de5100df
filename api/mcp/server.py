"""The MCP server over a `Service`: every tool, and refusals as tool errors.

A refusal (a bounce, a blocked or closed step, an unknown id, a bad argument) answers a
tool error whose text is the same message the HTTP API and the CLI give, from
`api.errors.problem`; nothing an argument can do stops the server. An unexpected failure
is logged and answered with the SDK's generic tool error.
"""

import inspect
import json
import logging
from typing import Any

from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel, ValidationError

from planledger import __version__
from planledger.api.errors import problem
from planledger.api.mcp.acting import Connections, mcp_connection
from planledger.api.mcp.argument_aliases import normalized
from planledger.api.mcp.handshake import INSTRUCTIONS
from planledger.api.mcp.portable import portable
from planledger.api.mcp.tools_claims import ClaimTools
from planledger.api.mcp.tools_paths import PathTools
from planledger.api.mcp.tools_plans import PlanTools
from planledger.api.mcp.tools_sessions import SessionTools
from planledger.api.mcp.tools_steps import StepTools
from planledger.api.service import Service

log = logging.getLogger("planledger.mcp")


class LedgerMCP(MCPServer[Any]):
    """The SDK's server, answering refusals with the API's own messages and forgetting a
    connection's sessions when its MCP session ends."""

    def __init__(self, connections: Connections, tools: list[Tool]) -> None:
        super().__init__("planledger", title="planledger", version=__version__,
                         instructions=INSTRUCTIONS, log_level="WARNING", tools=tools)
        self.connections = connections
        # The SDK opens an OpenTelemetry span around every message, a no-op until an
        # exporter is installed, and says to drop its middleware to opt out: nothing here
        # installs one, and the span's set-up was a few percent of every tool call.
        self.middleware[:] = [m for m in self.middleware
                              if not isinstance(m, OpenTelemetryMiddleware)]

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None,
                        ) -> CallToolResult | InputRequiredResult:
        if context is not None:  # here, on the event loop: tools run in worker threads
            self.connections.watch(mcp_connection(context))
        schema = self._tool_input_schema(name)
        if schema is not None:
            arguments = normalized(schema, arguments)
        unexpected = unexpected_arguments(schema, arguments)
        if unexpected is not None:
            return CallToolResult(content=[TextContent(type="text", text=unexpected)],
                                  structured_content={"reason": "invalid_input",
                                                      "message": unexpected},
                                  is_error=True)
        try:
            return await self._answer(name, arguments, context)
        except ToolError as error:
            refused = refusal_result(error.__cause__)
            if refused is None:
                raise
            log.info("tool %s refused: %s", name, refused.content[0])
            return refused

    async def _answer(self, name: str, arguments: dict[str, Any],
                      context: Context[Any, Any] | None,
                      ) -> CallToolResult | InputRequiredResult:
        """The tool's answer as one JSON block. The SDK's `Tool.run` validates the
        arguments, runs the tool and wraps its failures as the SDK does; its conversion is
        left out when the tool answers its declared model: that conversion rendered the
        answer as indented JSON text that `one_json_block` replaced, and checked the model
        against itself (pydantic passes an instance of the model through unchanged)."""
        tool = self._tool_manager.get_tool(name)
        if tool is None or context is None:
            return one_json_block(await super().call_tool(name, arguments, context))
        result = await tool.run(arguments, context)
        model = tool.fn_metadata.output_model
        if (isinstance(model, type) and isinstance(result, model)
                and isinstance(result, BaseModel) and not tool.fn_metadata.wrap_output):
            return answer_of(result)
        return one_json_block(tool.fn_metadata.convert_result(result))


def answer_of(model: BaseModel) -> CallToolResult:
    """A tool's model as its structured content and, equal to it, one JSON text block."""
    structured = model.model_dump(mode="json", by_alias=True)
    text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured)


def one_json_block(result: CallToolResult | InputRequiredResult,
                   ) -> CallToolResult | InputRequiredResult:
    """The answer as one JSON text block equal to its structured content, also when that
    is empty (a client that reads only the text sees the whole answer, `[]` included)."""
    if not isinstance(result, CallToolResult) or result.structured_content is None:
        return result
    text = json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    return result.model_copy(update={"content": [TextContent(type="text", text=text)]})


def refusal_result(cause: BaseException | None) -> CallToolResult | None:
    """A refused call as a tool error: the ledger's message as its text, and its facts
    (reason, step_id, holder and its name, fence, blockers, retry_after) as structured
    content an agent can act on. None for an unexpected failure."""
    text = refusal(cause)
    if text is None or cause is None:
        return None
    facts = problem(cause)[1].model_dump(mode="json", exclude_none=True)
    if isinstance(cause, ValidationError):
        facts = {"reason": "invalid_input", "message": text}
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=facts, is_error=True)


def unexpected_arguments(schema: dict[str, Any] | None, arguments: dict[str, Any],
                         ) -> str | None:
    """A refusal naming arguments the tool does not take (a misspelt `fence` would
    otherwise be dropped silently and the call would go ahead without it)."""
    if schema is None:
        return None  # an unknown tool: the SDK answers that
    known = list(schema.get("properties", {}))
    extra = sorted(set(arguments) - set(known))
    if not extra:
        return None
    return (f"invalid input: unexpected argument(s) {', '.join(extra)}; this tool takes "
            f"{', '.join(known) or 'no arguments'}")


def refusal(cause: BaseException | None) -> str | None:
    """The message that answers a refused call; None for an unexpected failure."""
    if isinstance(cause, ValidationError):
        return readable(cause)
    if cause is None:
        return None
    status, body = problem(cause)
    return None if status == 500 else body.message


def readable(error: ValidationError) -> str:
    """`invalid input: id: Field required; lease_seconds: ...`, naming each argument."""
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "arguments"
        parts.append(f"{where}: {item['msg']}")
    return "invalid input: " + "; ".join(parts)


def build_server(service: Service, single_connection: bool) -> LedgerMCP:
    """The tools over `service`. `single_connection`: the process serves one connection
    (stdio), so the session it starts acts for every later call. Each tool's input schema
    is made portable once, here (api.mcp.portable): what every tools/list answers."""
    connections = Connections(service.identity, single=single_connection)
    tools = []
    for group in (SessionTools, StepTools, ClaimTools, PlanTools, PathTools):
        for fn in group(service, connections).tools():
            tool = Tool.from_function(fn, description=inspect.cleandoc(fn.__doc__ or ""))
            tools.append(tool.model_copy(update={"parameters": portable(tool.parameters)}))
    return LedgerMCP(connections, tools)
