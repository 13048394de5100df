"""An answer in bounded time when PostgreSQL does not answer: a request that has not begun
its answer within the pool's connect timeout plus a second gets 503, whatever it waits on.

A database behind a dead link or on a hung host answers nothing, and a query already sent
on a pooled connection waits for it with no timeout of its own. With PostgreSQL held down,
reads hung, and writes gave up only after the driver's ten tries (bench/findings.md). The work
goes on in its thread and its answer is dropped when it comes; a write may still commit
then, as when any acknowledgement is lost: a client retries with the same
Idempotency-Key and gets the first answer. A response that has begun (the console's event
stream) is never cut.
"""

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from planledger.api.schemas import ErrorOut

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("planledger.http")


def unanswered(seconds: float) -> str:
    return (f"the database did not answer within {seconds:g} s; retry shortly (a write may "
            "still have been recorded: retry it with the same Idempotency-Key)")


class AnswerDeadline:
    """ASGI middleware: 503 for an HTTP request whose answer has not begun in `seconds`."""

    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        began = asyncio.Event()
        gave_up = False

        async def watched(message: Message) -> None:
            if gave_up:
                return  # answered already: the late answer is dropped
            if message["type"] == "http.response.start":
                began.set()
            await send(message)

        work = asyncio.ensure_future(self.app(scope, receive, watched))
        waiting_for_start = asyncio.ensure_future(began.wait())
        done, _ = await asyncio.wait({work, waiting_for_start}, timeout=self.seconds,
                                     return_when=asyncio.FIRST_COMPLETED)
        if done:
            waiting_for_start.cancel()
            await work  # begun (or finished): it runs to its end, streams included
            return
        waiting_for_start.cancel()
        gave_up = True
        log.warning("%s %s answered 503: no answer from the database within %g s",
                    scope["method"], scope["path"], self.seconds)
        await _answer_503(send, unanswered(self.seconds))
        work.add_done_callback(_quietly)


def _quietly(work: "asyncio.Future[None]") -> None:
    """A request given up on ends whenever its work does; how it ended is not news."""
    with contextlib.suppress(BaseException):
        work.exception()


async def _answer_503(send: Send, message: str) -> None:
    body = ErrorOut(reason="store_unavailable", message=message).model_dump_json(
        exclude_none=True).encode()
    await send({"type": "http.response.start", "status": 503,
                "headers": [(b"content-type", b"application/json"), (b"retry-after", b"1"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
