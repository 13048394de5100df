"""Which session a tool call acts for.

A token names its session and proves it, so a call carrying one (alone, or with the
`session_id` it belongs to) acts for that session. Otherwise the call acts for the session
started on its MCP connection: a stdio server is one connection; over streamable HTTP a
connection is an MCP session (the `Mcp-Session-Id` of handshake-era clients, which is what
Claude Code and Codex speak). A stateless client (protocol 2026-07-28) has no connection to
remember anything by, so it passes its token on every call. Several sessions started on
one connection are never guessed between: the call must name one.
"""

import threading
from collections import OrderedDict
from collections.abc import Mapping

from api.errors import ApiError, Forbidden, Unauthorized
from api.identity import Identity
from ledger.domain.ids import SessionId

STDIO = "stdio"
MAX_CONNECTIONS = 10_000  # as many as the SDK's session manager keeps open by default
SESSION_HEADER = "mcp-session-id"  # mcp.server.streamable_http.MCP_SESSION_ID_HEADER


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

    def key(self, headers: Mapping[str, str] | None) -> str | None:
        """The connection a call arrived on; None for a stateless HTTP call."""
        if self.single:
            return STDIO
        return headers.get(SESSION_HEADER) if headers else None

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
