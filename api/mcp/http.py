"""The MCP server over streamable HTTP, at `/mcp` on the FastAPI app.

The SDK's session manager needs a task group for the app's lifetime, so it runs inside the
app's lifespan (uvicorn's default; an app served with `lifespan="off"` has no `/mcp`). A
manager runs only once, so each run of the lifespan (a test client may enter it again)
gets a fresh one, and the route always hands requests to the current one. Requests whose
Host or Origin is foreign are refused before they reach it (api.http.origin), and the
caller's credential is proven by the gate (api.http.gate): a session started here takes
the role of the key in the connection's `Authorization` header.

A tool call is answered with a plain JSON body, not an SSE stream: no tool sends
notifications while it runs, and the stream's set-up and framing made a `tasks_claim`
round trip much slower than the HTTP claim's (`python -m planledger.bench mcp`; figures in
bench/findings.md).
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from planledger.api.http.departure import CancelledWhenCallerLeaves
from planledger.api.mcp.server import LedgerMCP, build_server
from planledger.api.mcp.session_watch import IDLE_SECONDS, SessionWatch, WatchedSessions
from planledger.api.service import Service

PATH = "/mcp"
# The app's own origin guard (api.http.origin) checks Host and Origin on every route,
# /mcp included, against every name the server answers to; the SDK's check, which knows
# three loopback spellings and admits any local port's origin, would say less, and only
# here.
ONE_GUARD = TransportSecuritySettings(enable_dns_rebinding_protection=False)


class _Endpoint:
    """An ASGI app (not a request handler): the current session manager answers."""

    def __init__(self, server: LedgerMCP) -> None:
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.server.session_manager.handle_request(scope, receive, send)


def install_mcp(app: FastAPI, service: Service, host: str) -> None:
    """Serve the MCP tools over `service` at /mcp on `app` (bound to `host`)."""
    server = build_server(service, single_connection=False)
    app.state.mcp = server  # what operators and tests inspect (its connections)
    settings = service.settings
    watch = SessionWatch(settings.mcp_fresh_seconds, settings.mcp_sessions_per_address)
    # A tool call its client gives up on (closing its request, as the 2026-07-28 protocol
    # cancels) stops: a waiting claim-next then claims nothing for nobody.
    watched = WatchedSessions(CancelledWhenCallerLeaves(_Endpoint(server)), watch)
    app.state.mcp_sessions = watch
    # First, not last: the router tries its routes in order, and /mcp was matched against
    # every API route before its own (35, a regular expression each) on every call.
    app.router.routes.insert(0, Route(PATH, endpoint=watched))
    outer = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(parent: FastAPI) -> AsyncIterator[Any]:
        server.streamable_http_app(streamable_http_path=PATH, host=host,  # a fresh manager
                                   json_response=True, transport_security=ONE_GUARD,
                                   session_idle_timeout=IDLE_SECONDS)
        watch.sessions.clear()  # the last manager's sessions ended with it
        async with outer(parent) as state, server.session_manager.run(), \
                anyio.create_task_group() as reaping:
            reaping.start_soon(_reap_every, watched, watch.fresh_seconds)
            yield state
            reaping.cancel_scope.cancel()

    app.router.lifespan_context = lifespan


async def _reap_every(watched: WatchedSessions, seconds: float) -> None:
    """Unused sessions end without waiting for someone to open another."""
    while True:
        await anyio.sleep(seconds)
        await watched.reap()
