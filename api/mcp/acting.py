"""Which session a tool call acts for.

A token names its session and proves it, so a call carrying one (alone, or with the
`session_id` it belongs to) acts for that session. Otherwise the call acts for the session
started on its MCP connection: a stdio server is one connection; over streamable HTTP a
connection is an MCP session that the SDK's session manager opened with an `initialize`
handshake and still holds (what Claude Code and Codex speak). A connection is the SDK's own
`Connection` object, never a header: a stateless call (protocol 2026-07-28) arrives on a
fresh connection of its own, so whatever `Mcp-Session-Id` it sends, it has nothing
remembered and passes its token on every call. When an MCP session ends (DELETE /mcp, idle
timeout, shutdown) the sessions bound to it are forgotten. Several sessions started on one
connection are never guessed between: the call must name one.
"""

import threading
from collections import OrderedDict
from collections.abc import MutableMapping
from typing import Any

from mcp.server.connection import Connection
from mcp.server.mcpserver import Context

from planledger.api.errors import ApiError, Forbidden, Unauthorized
from planledger.api.identity import Identity
from planledger.ledger.domain.ids import SessionId

STDIO = "stdio"
MAX_CONNECTIONS = 10_000  # as many as the SDK's session manager keeps open by default
WATCHED = "planledger.watched"  # set in a connection's state once its end is hooked


class NoActingSession(ApiError):
    """The call acts for a session, but it names none and its connection started none."""

    status = 401
    reason = "no_session"


class AmbiguousSession(ApiError):
    """Several sessions were started on this connection and the call names none of them."""

    status = 400
    reason = "ambiguous_session"


NO_SESSION = ("no session: call session_start first (it returns session_id and token). A "
              "client without a lasting MCP connection passes token on every call; after a "
              "reconnect, pass the token of the session you started before.")


class Connections:
    """The sessions started on each MCP connection (bounded: the oldest are forgotten)."""

    def __init__(self, identity: Identity, single: bool) -> None:
        self.identity = identity
        self.single = single
        self._started: OrderedDict[str, list[SessionId]] = OrderedDict()
        self._lock = threading.Lock()

    def key(self, connection: Connection | None) -> str | None:
        """The connection a call arrived on: the id the session manager gave the MCP
        session it created; None for a stateless call (its connection has no id)."""
        if self.single:
            return STDIO
        return connection.session_id if connection is not None else None

    def watch(self, connection: Connection | None) -> None:
        """Forget the sessions bound to `connection` once its MCP session ends. Call it on
        the event loop as a call arrives: the SDK unwinds a connection's exit stack after
        every call on it has finished, so nothing is remembered for it afterwards."""
        key = self.key(connection)
        if self.single or connection is None or key is None or WATCHED in connection.state:
            return
        connection.state[WATCHED] = True
        connection.exit_stack.callback(self.ended, key)

    def ended(self, key: str) -> None:
        """The connection's MCP session ended: its sessions act nowhere through it now."""
        with self._lock:
            self._started.pop(key, None)

    def remember(self, key: str | None, session_id: str) -> None:
        if key is None:
            return
        with self._lock:
            self._started.setdefault(key, []).append(SessionId(session_id))
            self._started.move_to_end(key)
            while len(self._started) > MAX_CONNECTIONS:
                self._started.popitem(last=False)

    def forget(self, session_id: str) -> None:
        """An ended session acts nowhere any more (it may have been ended from elsewhere)."""
        with self._lock:
            for started in self._started.values():
                if session_id in started:
                    started.remove(SessionId(session_id))

    def started(self, key: str | None) -> list[SessionId]:
        with self._lock:
            return list(self._started.get(key or "", []))

    def actor(self, key: str | None, session_id: str | None, token: str | None) -> SessionId:
        """The session the call acts for; refused when it cannot be told (see module doc)."""
        if token:
            proven = self.identity.session_of(token)
            if session_id and session_id != proven:
                raise Forbidden(f'the token is for session "{proven}", not "{session_id}"')
            return proven
        started = self.started(key)
        if session_id:
            if session_id not in started:
                raise Unauthorized(f'session "{session_id}" was not started on this connection: '
                                   "pass its token too (session_start returned it)")
            return SessionId(session_id)
        if not started:
            raise NoActingSession(NO_SESSION)
        if len(started) > 1:
            names = ", ".join(started)
            raise AmbiguousSession(f"several sessions were started on this connection ({names}): "
                                   "pass session_id to say which one acts")
        return started[0]

    def maybe_actor(self, key: str | None, session_id: str | None, token: str | None,
                    ) -> SessionId | None:
        """The acting session if the call names one or its connection has exactly one;
        None when neither (reads and drops work without a session)."""
        if token or session_id or len(self.started(key)) == 1:
            return self.actor(key, session_id, token)
        return None


def mcp_connection(ctx: Context[Any, Any]) -> Connection | None:
    """The SDK's `Connection` a tool call arrived on.

    mcp 2.3 builds one per handshake-era MCP session (its `session_id` is the id the
    session manager issued and routes by) and a fresh one per stateless call, but hands a
    tool only the request's `ServerSession`, which keeps it private (the SDK's own
    `mcp.server.context.Context.connection` is not built for tools yet). Should a later SDK
    move it, every call reads as connectionless and needs its token: never a wider grant.
    """
    try:
        session = ctx.request_context.session
    except ValueError:  # a Context built outside a request
        return None
    found = getattr(session, "_connection", None)
    return found if isinstance(found, Connection) else None


def request_scope(ctx: Context[Any, Any]) -> MutableMapping[str, Any] | None:
    """The ASGI scope of the HTTP request a tool call came in (streamable HTTP); None on
    stdio, which has no request."""
    try:
        request = ctx.request_context.request
    except ValueError:  # called outside a request
        return None
    scope = getattr(request, "scope", None)
    return scope if isinstance(scope, MutableMapping) else None
