"""What the app's own ASGI middleware share: the ASGI types, and a JSON refusal sent
before the app sees the request (each middleware is a plain ASGI callable: Starlette's
`BaseHTTPMiddleware` costs a task and a copy of every body per request)."""

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def header(scope: Scope, name: bytes) -> str | None:
    """One request header's value (the first, if sent twice), decoded as latin-1 as HTTP
    defines; None when absent."""
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def send_refusal(send: Send, status: int, reason: str, message: str, *,
                       close: bool = False) -> None:
    """Answer with the API's error body (`api.schemas.ErrorOut`'s fields); `close` when
    the request's body was left unread, so the connection cannot carry another."""
    body = json.dumps({"reason": reason, "message": message}).encode()
    headers = [(b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
