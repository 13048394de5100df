"""Who holds MCP sessions open at `/mcp`, so nobody can hold all of them.

The SDK's session manager keeps each streamable-HTTP session until its client deletes it
or it has been idle for half an hour, up to a total cap. 10,000 anonymous `initialize`
calls filled that cap and locked every new client out for thirty minutes. Two rules keep
sessions for the clients that use them:

- a session that has sent nothing after its handshake (`initialize`, then the
  `initialized` notification) is ended `fresh_seconds` after it began (a minute by
  default); one that has sent a request since lives by the SDK's idle rule;
- one client address holds at most `per_address` sessions at once; a request that would
  open another is answered 503 with Retry-After, naming the cap.

Sessions are ended as their clients end them, with a DELETE on the session's id through
the SDK's own handler (its public door), so the SDK forgets them as it always does. The
watch is told of every request and of each new session's id (the `mcp-session-id` its
answer carries); it reaps on each request that would open a session and every
`fresh_seconds` besides. Time comes from `now` (a monotonic clock; tests inject one).
"""

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planledger.api.settings import DEFAULT_FRESH_SECONDS, DEFAULT_PER_ADDRESS

SESSION_HEADER = b"mcp-session-id"
HANDSHAKE_REQUESTS = 1  # after `initialize`: the `initialized` notification
IDLE_SECONDS = 1_800.0  # the SDK's idle rule, which the watch forgets sessions by too


@dataclass
class _Session:
    address: str
    began: float
    last_seen: float
    requests: int = 0  # sent with its id, the handshake's included


@dataclass
class SessionWatch:
    """The live sessions by id, with their address and how much they were used."""

    fresh_seconds: float = DEFAULT_FRESH_SECONDS
    per_address: int = DEFAULT_PER_ADDRESS
    now: Callable[[], float] = time.monotonic
    sessions: dict[str, _Session] = field(default_factory=dict)

    def held_by(self, address: str) -> int:
        return sum(1 for s in self.sessions.values() if s.address == address)

    def began(self, session_id: str, address: str) -> None:
        moment = self.now()
        self.sessions[session_id] = _Session(address, moment, moment)

    def used(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.requests += 1
            session.last_seen = self.now()

    def ended(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)

    def due(self) -> list[str]:
        """The sessions to end now: unused past `fresh_seconds`; and forgets the ones the
        SDK has ended for idleness."""
        moment = self.now()
        for session_id, session in list(self.sessions.items()):
            if moment - session.last_seen > IDLE_SECONDS:
                del self.sessions[session_id]
        return [session_id for session_id, session in self.sessions.items()
                if session.requests <= HANDSHAKE_REQUESTS
                and moment - session.began > self.fresh_seconds]


class WatchedSessions:
    """An ASGI app in front of the SDK's handler: counts, caps and reaps its sessions."""

    def __init__(self, handler: Callable[[Scope, Receive, Send], Awaitable[None]],
                 watch: SessionWatch) -> None:
        self.handler = handler
        self.watch = watch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        session_id = _header(scope, SESSION_HEADER)
        address = (scope.get("client") or ("unknown", 0))[0]
        if session_id is not None:
            self.watch.used(session_id)
            if scope.get("method") == "DELETE":
                self.watch.ended(session_id)
            await self.handler(scope, receive, send)
            return
        await self.reap()
        opening = _header(scope, b"mcp-method") in (None, "initialize")  # else stateless
        if opening and self.watch.held_by(address) >= self.watch.per_address:
            await _refused(self.watch.per_address, self.watch.fresh_seconds)(
                scope, receive, send)
            return
        await self.handler(scope, receive, self._learning(send, address))

    async def reap(self) -> None:
        """End every session `due` ends, as its client would: a DELETE of its id."""
        for session_id in self.watch.due():
            self.watch.ended(session_id)
            await self.handler(_delete_scope(session_id), _empty_body, _discard)

    def _learning(self, send: Send, address: str) -> Send:
        async def learning(message: Message) -> None:
            if message["type"] == "http.response.start":
                began = _header(message, SESSION_HEADER)
                if began is not None:
                    self.watch.began(began, address)
            await send(message)
        return learning


def _header(holder: Scope | Message, name: bytes) -> str | None:
    for key, value in holder.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def _delete_scope(session_id: str) -> Scope:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": "DELETE", "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
            "query_string": b"", "root_path": "", "client": ("127.0.0.1", 0),
            "server": ("127.0.0.1", 0),
            "headers": [(SESSION_HEADER, session_id.encode("latin-1"))]}


async def _empty_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _discard(message: Message) -> None:
    return None


def _refused(cap: int, retry_after: float) -> ASGIApp:
    from starlette.responses import JSONResponse

    return JSONResponse(
        {"reason": "too_many_sessions",
         "message": f"this address holds {cap} MCP sessions, the most one may hold at "
                    "once: end one (DELETE /mcp with its mcp-session-id), or wait for an "
                    "unused one to expire"},
        status_code=503, headers={"Retry-After": str(max(1, round(retry_after)))})
