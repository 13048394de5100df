"""The MCP server over a `Service`: every tool, and refusals as tool errors.

A refusal (a bounce, a blocked or closed step, an unknown id, a bad argument) answers a
tool error whose text is the same message the HTTP API and the CLI give, from
`api.errors.problem`; nothing an argument can do stops the server. An unexpected failure
is logged and answered with the SDK's generic tool error.

The server is the SDK's low-level `Server` with a table of tools of its own. The SDK's
`MCPServer` keeps its tools and its low-level server in private attributes, and its stdio
runner reads only the process's own streams (issue 29: public interfaces only). Each tool
is still the SDK's `Tool`, which validates the arguments and runs the function.
"""

import inspect
import json
import logging
from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    TextContent,
)
from mcp.types import Tool as ListedTool
from pydantic import BaseModel, ValidationError

from planledger import __version__
from planledger.api.errors import problem
from planledger.api.mcp.acting import Connections, mcp_connection
from planledger.api.mcp.argument_aliases import normalized
from planledger.api.mcp.handshake import INSTRUCTIONS
from planledger.api.mcp.lean import lean_answer, lean_schema
from planledger.api.mcp.portable import portable
from planledger.api.mcp.tools_claims import ClaimTools
from planledger.api.mcp.tools_paths import PathTools
from planledger.api.mcp.tools_plans import PlanTools
from planledger.api.mcp.tools_sessions import SessionTools
from planledger.api.mcp.tools_steps import StepTools
from planledger.api.service import Service

log = logging.getLogger("planledger.mcp")
Request = ServerRequestContext[Any]


class LedgerMCP(Server[Any]):
    """The SDK's server over `tools`, answering refusals with the API's own messages and
    forgetting a connection's sessions when its MCP session ends."""

    def __init__(self, connections: Connections, tools: list[Tool]) -> None:
        self.connections = connections
        self.tools = {tool.name: tool for tool in tools}
        # Each tool's output schema as listed and as its answers are left lean by (api.mcp.lean)
        self.schemas = {tool.name: lean_schema(tool.output_schema) for tool in tools}
        self.listed = ListToolsResult(tools=[listed(tool, self.schemas[tool.name])
                                             for tool in tools])
        super().__init__(
            "planledger", title="planledger", version=__version__, instructions=INSTRUCTIONS,
            get_tool_input_schema=self.input_schema,
            on_list_tools=self.list_tools, on_call_tool=self.call_tool,
            # No resources and no prompts, answered as MCPServer answers when it has none:
            # clients were always offered both (api.mcp.handshake says so too).
            on_list_resources=no_resources, on_list_resource_templates=no_templates,
            on_read_resource=unknown_resource, on_list_prompts=no_prompts,
            on_get_prompt=unknown_prompt,
            on_subscriptions_listen=ListenHandler(InMemorySubscriptionBus()))
        # The SDK's default chain is one OpenTelemetry span around every message, a no-op
        # until an exporter is installed; the SDK says to drop it to opt out. Nothing here
        # installs one, and the span's set-up was a few percent of every tool call. What
        # stays is the request-state boundary MCPServer adds, with the same policy.
        self.middleware[:] = [RequestStateBoundary(RequestStateSecurity.ephemeral(),
                                                   default_audience=self.name)]

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The tool's input schema; None for a name that is no tool."""
        tool = self.tools.get(name)
        return None if tool is None else tool.parameters

    async def list_tools(self, ctx: Request, params: PaginatedRequestParams | None,
                         ) -> ListToolsResult:
        return self.listed

    async def call_tool(self, ctx: Request, params: CallToolRequestParams,
                        ) -> CallToolResult | InputRequiredResult:
        context: Context[Any, Any] = Context(request_context=ctx, input_params=params)
        self.connections.watch(mcp_connection(context))  # on the event loop, before the
        tool = self.tools.get(params.name)               # tool's worker thread
        if tool is None:
            return failed(f"Unknown tool: {params.name}")
        arguments = normalized(tool.parameters, params.arguments or {})
        unexpected = unexpected_arguments(tool.parameters, arguments)
        if unexpected is not None:
            return CallToolResult(content=[TextContent(type="text", text=unexpected)],
                                  structured_content={"reason": "invalid_input",
                                                      "message": unexpected},
                                  is_error=True)
        try:
            return await answer(tool, arguments, context)
        except MCPError:
            raise  # a protocol error, as the SDK answers it
        except Exception as error:
            refused = refusal_result(error.__cause__) if isinstance(error, ToolError) else None
            if refused is None:
                log.exception("tool %s failed", tool.name)
                return failed(str(error))  # `Tool.run` says only "Error executing tool X"
            log.info("tool %s refused: %s", tool.name, refused.content[0])
            return refused


async def answer(tool: Tool, arguments: dict[str, Any], context: Context[Any, Any],
                 ) -> CallToolResult | InputRequiredResult:
    """The tool's answer as one JSON block, its steps lean (api.mcp.lean). The SDK's
    `Tool.run` validates the arguments, runs the tool and wraps its failures as the SDK
    does; the SDK's conversion is left out when the tool answers its declared model: that
    conversion rendered the answer as indented JSON text that `one_json_block` replaced,
    and checked the model against itself (pydantic passes an instance of the model through
    unchanged)."""
    result = await tool.run(arguments, context)
    model = tool.fn_metadata.output_model
    if (isinstance(model, type) and isinstance(result, model)
            and isinstance(result, BaseModel) and not tool.fn_metadata.wrap_output):
        return answer_of(result, tool.output_schema)
    return one_json_block(tool.fn_metadata.convert_result(result), tool.output_schema)


def listed(tool: Tool, output_schema: dict[str, Any] | None) -> ListedTool:
    """The tool as tools/list shows it (what MCPServer lists for it), with `output_schema`
    (its lean one)."""
    return ListedTool(name=tool.name, title=tool.title, description=tool.description,
                      input_schema=tool.parameters, output_schema=output_schema,
                      annotations=tool.annotations, icons=tool.icons, _meta=tool.meta)


def failed(text: str) -> CallToolResult:
    """The SDK's tool error: the text alone."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


async def no_resources(ctx: Request, params: PaginatedRequestParams | None,
                       ) -> ListResourcesResult:
    return ListResourcesResult(resources=[])


async def no_templates(ctx: Request, params: PaginatedRequestParams | None,
                       ) -> ListResourceTemplatesResult:
    return ListResourceTemplatesResult(resource_templates=[])


async def unknown_resource(ctx: Request, params: ReadResourceRequestParams,
                           ) -> ReadResourceResult:
    raise MCPError(code=INVALID_PARAMS, message=f"Unknown resource: {params.uri}",
                   data={"uri": str(params.uri)})


async def no_prompts(ctx: Request, params: PaginatedRequestParams | None,
                     ) -> ListPromptsResult:
    return ListPromptsResult(prompts=[])


async def unknown_prompt(ctx: Request, params: GetPromptRequestParams) -> GetPromptResult:
    raise ValueError(f"Unknown prompt: {params.name}")  # what MCPServer raises


def answer_of(model: BaseModel, schema: dict[str, Any] | None = None) -> CallToolResult:
    """A tool's model as its structured content and, equal to it, one JSON text block; its
    steps lean by `schema`, the tool's output schema (api.mcp.lean)."""
    structured = lean_answer(model.model_dump(mode="json", by_alias=True), schema)
    text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=structured)


def one_json_block(result: CallToolResult | InputRequiredResult,
                   schema: dict[str, Any] | None = None) -> CallToolResult | InputRequiredResult:
    """The answer as one JSON text block equal to its structured content, also when that
    is empty (a client that reads only the text sees the whole answer, `[]` included); its
    steps lean by `schema`, the tool's output schema (api.mcp.lean)."""
    if not isinstance(result, CallToolResult) or result.structured_content is None:
        return result
    structured = lean_answer(result.structured_content, schema)
    text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    return result.model_copy(update={"content": [TextContent(type="text", text=text)],
                                     "structured_content": structured})


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


def unexpected_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """A refusal naming arguments the tool does not take (a misspelt `fence` would
    otherwise be dropped silently and the call would go ahead without it)."""
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
