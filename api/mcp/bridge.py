"""`planledger mcp --url`: one agent on stdio, relayed to a running server's `/mcp`.

The tools, their rules and the session this connection starts all live on the server: the
relay holds one MCP connection to it (handshake era, so the server remembers the session
started on it) and passes tools/list and tools/call through, with the SDK's client and
server on either side. If the server drops the connection (it forgets idle ones after 30
minutes, or it restarted), the failing call says so and the next call connects afresh.
The access key in PLANLEDGER_KEY goes upstream as `Authorization: Bearer <key>`.
"""

import os

import anyio
import httpx2
from anyio.abc import TaskGroup, TaskStatus
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)

from planledger import __version__
from planledger.api.client import KEY_SETTING
from planledger.api.errors import ConfigError
from planledger.api.mcp.handshake import INSTRUCTIONS
from planledger.api.mcp.http import PATH
from planledger.ledger.commands import MAX_WAIT_SECONDS

# An answer may take as long as the longest claim-next wait: the upstream read outlasts it,
# so a waiting agent hears its grant instead of a timeout (its grant would be lost).
UPSTREAM = httpx2.Timeout(30.0, read=MAX_WAIT_SECONDS + 60.0)


def mcp_url(url: str) -> str:
    """The server's MCP endpoint from its base URL (or the endpoint itself)."""
    base = url.rstrip("/")
    return base if base.endswith(PATH) else base + PATH


class Relay:
    """The upstream connection, held open by a task of its own (the SDK client's scopes
    must close in the task that opened them), and reopened after a failure."""

    def __init__(self, url: str, tasks: TaskGroup, key: str | None = None) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.tasks = tasks
        self.client: Client | None = None
        self._done = anyio.Event()

    async def _hold(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        done = self._done = anyio.Event()
        held: Client | None = None
        try:
            async with httpx2.AsyncClient(headers=self.headers, timeout=UPSTREAM) as http, \
                    Client(streamable_http_client(self.url, http_client=http),
                           mode="legacy") as client:
                self.client = held = client
                task_status.started()
                await done.wait()
        except Exception:
            if held is None:
                raise  # could not connect: the caller of start() hears it
            if self.client is held:
                self.client = None  # the connection broke: the next call reconnects

    async def connect(self) -> Client:
        if self.client is None:
            await self.tasks.start(self._hold)
        assert self.client is not None
        return self.client

    def drop(self) -> None:
        self.client = None
        self._done.set()

    async def list_tools(self, ctx: ServerRequestContext, params: PaginatedRequestParams | None,
                         ) -> ListToolsResult:
        client = await self.connect()
        return await client.list_tools(cursor=params.cursor if params else None)

    async def call_tool(self, ctx: ServerRequestContext, params: CallToolRequestParams,
                        ) -> CallToolResult:
        try:
            client = await self.connect()
            return await client.call_tool(params.name, params.arguments)
        except Exception as error:  # the connection, not the tool: tool errors are results
            self.drop()
            text = (f"lost the connection to {self.url} ({error}); the next call reconnects. "
                    "The server forgets the session started on a lost connection: call "
                    "session_start again, or pass session_id and token.")
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


async def serve_bridge(url: str) -> None:
    """Relay stdin/stdout to the server at `url` until stdin closes, sending the access
    key in PLANLEDGER_KEY (if set) on every request."""
    try:
        await _serve(mcp_url(url), os.environ.get(KEY_SETTING) or None)
    except* ConfigError as failed:  # no server there: one line, not a traceback
        raise failed.exceptions[0] from None


async def _serve(url: str, key: str | None) -> None:
    async with anyio.create_task_group() as tasks:
        relay = Relay(url, tasks, key)
        try:
            await relay.connect()  # fail fast when the server is not there
        except Exception as error:
            raise ConfigError(f"cannot reach the MCP server at {url}: {_cause(error)}") from None
        server: Server = Server("planledger", version=__version__, instructions=INSTRUCTIONS,
                                on_list_tools=relay.list_tools, on_call_tool=relay.call_tool)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        relay.drop()


def _cause(error: BaseException) -> BaseException:
    """The first failure inside (task) groups of failures."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error
