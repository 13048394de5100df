"""A long answer that stops when its HTTP caller leaves.

A plain (not streamed) answer is never told its client disconnected: Starlette runs the
handler to its end and drops the answer. For a claim-next that waits up to minutes, that
end is a claim granted to nobody (api.waiting lets such a claim go). Here the handler's
work runs beside a watch on the connection: the client's disconnect cancels the work.
`unless_caller_leaves` does this for one handler's work; `CancelledWhenCallerLeaves` for
a whole ASGI app (the MCP endpoint, whose tool calls are answered with plain JSON bodies).

Once an answer is complete, the server answers `receive` with a disconnect whether or not
the client has left. That is not a departure: an app may go on working after it answers.
The MCP SDK answers a notification (`notifications/cancelled` among them) 202 Accepted
and only then hands it to its session, so cancelling it there lost the client's cancel,
and the abandoned call it named went on waiting.
"""

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

T = TypeVar("T")
# The status logs and metrics record for an answer nobody was left to read (nginx's 499).
CLIENT_CLOSED_REQUEST = 499


class CallerLeft(Exception):
    """The HTTP client disconnected before its answer was ready: nobody is left to tell."""


async def unless_caller_leaves(receive: Receive, work: Callable[[], Awaitable[T]]) -> T:
    """`work`'s answer; if the client disconnects first, `work` is cancelled and
    `CallerLeft` raised. `receive`: the request's, after its body was read (the server
    then answers it only with the disconnect, when it comes)."""
    answers = await _beside(lambda: _disconnected(receive), work)
    if not answers:
        raise CallerLeft
    return answers[0]


async def _beside(watch: Callable[[], Awaitable[None]],
                  work: Callable[[], Awaitable[T]]) -> list[T]:
    """`[work's answer]`, or `[]` when `watch` returned first (and `work` was cancelled).
    An error of `work` is raised as itself, not wrapped in the task group's exception
    group, so the handlers that turn refusals into answers still see it."""
    answers: list[T] = []
    failures: list[Exception] = []
    async with anyio.create_task_group() as group:

        async def watching() -> None:
            await watch()
            group.cancel_scope.cancel()

        group.start_soon(watching)
        try:
            answers.append(await work())
        except Exception as failure:  # raised again below, unwrapped
            failures.append(failure)
        group.cancel_scope.cancel()
    if failures:
        raise failures[0]
    return answers


class CancelledWhenCallerLeaves:
    """ASGI middleware: an HTTP request's handling is cancelled when its client
    disconnects before the app has sent its whole answer. The watch begins once the app
    has read the whole body, so it takes no message the app wants (a server answers later
    reads only with the disconnect). Work the app does after its answer is complete runs
    to its end (the module's doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body_read, answered = anyio.Event(), anyio.Event()

        async def reading() -> Message:
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_read.set()
            return message

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered.set()  # before the server hears of it: its disconnect comes next
            await send(message)

        async def watch() -> None:
            await body_read.wait()
            await _disconnected(receive)
            if answered.is_set():  # the server's word for "answer complete": nobody left
                await anyio.sleep_forever()  # until the app's work ends

        await _beside(watch, lambda: self.app(scope, reading, sending))


async def _disconnected(receive: Receive) -> None:
    """Return once the client has disconnected (or its answer is complete)."""
    while (await receive())["type"] != "http.disconnect":
        pass
