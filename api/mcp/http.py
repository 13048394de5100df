"""The MCP server over streamable HTTP, at `/mcp` on the FastAPI app.

The SDK's session manager needs a task group for the app's lifetime, so it runs inside the
app's lifespan (uvicorn's default; an app served with `lifespan="off"` has no `/mcp`).
Bound to a loopback address, the SDK also refuses requests whose Host or Origin is not
local (DNS-rebinding protection).
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from api.mcp.server import build_server
from api.service import Service

PATH = "/mcp"


def install_mcp(app: FastAPI, service: Service, host: str) -> None:
    """Serve the MCP tools over `service` at /mcp on `app` (bound to `host`)."""
    server = build_server(service, single_connection=False)
    mcp_app = server.streamable_http_app(streamable_http_path=PATH, host=host)
    app.router.routes.extend(mcp_app.routes)
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(parent: FastAPI) -> AsyncIterator[Any]:
        async with outer(parent) as state, server.session_manager.run():
            yield state

    app.router.lifespan_context = lifespan
