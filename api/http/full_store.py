"""Writes refused at the door while the store is full: 503 before the body is read.

Once a write has failed for want of disk space, the store refuses the next ones at once
until room is made (infra.sqlite_file.DiskWatch). Clients retry; each retry that reached
the route was still read, parsed, validated and handed to a worker thread before being
refused, and with four clients retrying that work kept reads waiting. Here it is answered
first, on the event loop, for the API's writes (every POST, PUT, PATCH and DELETE under
/api/); reads pass.
"""

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from planledger.api.errors import store_trouble
from planledger.api.schemas import ErrorOut
from planledger.ledger.store import EventStore

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_FULL = ErrorOut(reason="store_unavailable",
                 message=store_trouble(OSError("disk is full"))).model_dump_json().encode()


class RefuseWhileFull:
    """ASGI middleware: 503 for an API write while `store.full()`."""

    def __init__(self, app: ASGIApp, store: EventStore) -> None:
        self.app, self.store = app, store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] == "http" and scope["method"] in WRITES
                and scope["path"].startswith("/api/") and self.store.full()):
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"retry-after", b"1"),
                                    (b"content-length", str(len(_FULL)).encode())]})
            await send({"type": "http.response.body", "body": _FULL})
            return
        await self.app(scope, receive, send)
