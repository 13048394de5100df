"""The size of a request body: refused beyond `MAX_BODY_BYTES` with 413 and a message, before
the app reads it (by its Content-Length, or while a chunked one streams in).

The cap leaves room for the largest plan the ledger takes in one request (tens of
thousands of steps with short titles); a body of gigabytes never reaches the JSON parser.
"""

from planledger.api.http.asgi import ASGIApp, Message, Receive, Scope, Send, send_refusal

MAX_BODY_BYTES = 16 * 1024 * 1024


def too_large(limit: int) -> str:
    return f"request body too large: the limit is {limit} bytes"


class BodyLimit:
    """ASGI middleware: 413 for a body over `limit` bytes."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length", b"")
        if declared.isdigit():
            if int(declared) > self.limit:
                await _refuse(send, self.limit)
                return
            await self.app(scope, receive, send)  # the server reads no more than declared
            return
        # No length declared (a chunked body): read it here, up to the limit, then hand
        # it on whole; the app would read it all into memory anyway.
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = bool(message.get("more_body"))
            if size > self.limit:
                await _refuse(send, self.limit)
                return
        await self.app(scope, _replay(b"".join(chunks), receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the client's disconnect, when it comes

    return replayed


async def _refuse(send: Send, limit: int) -> None:
    await send_refusal(send, 413, "body_too_large", too_large(limit), close=True)
