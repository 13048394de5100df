"""`planledger mcp`: the MCP tools for one agent over stdin/stdout.

For clients that start their tools as processes (Claude Code's and Codex CLI's stdio
servers). The process is the agent's one connection, so the session it starts acts for
every later call. Nothing but the protocol goes to stdout; messages go to stderr.

On the embedded store the client's `initialize` is answered first (api.mcp.handshake,
which the program calls before parsing the arguments) and only then are the MCP SDK
loaded and the store opened: a client waits for that answer, often
for several servers started at once, and the rest takes seconds (issue 19). The SDK is
then handed the same `initialize` and its answer dropped, so it serves the session whole.

Where stdin and stdout are pipes or sockets (as a client starts its servers), messages are
read and written on the event loop (asyncio's pipe transports). The SDK's own streams
(`anyio.wrap_file`) read each line, write each answer and flush it in a worker thread:
three hand-offs between threads per call, a large share of a `tasks_claim` round trip
(figure: bench/findings.md).
"""

import asyncio
import contextlib
import json
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import IO, TYPE_CHECKING, Any, cast

from planledger.api.cli.grammar import Values

if TYPE_CHECKING:
    from planledger.api.mcp.handshake import Wire
    from planledger.api.mcp.server import LedgerMCP

CLOSING_SECONDS = 10.0  # how long the last answers may take to leave when the input ends


def mcp(v: Values) -> None:
    url, db, lease_default = v["url"], v["db"], v["lease_default"]
    if url:
        import anyio  # the MCP stack loads only here: other commands start faster without it

        from planledger.api.cli.common import answering_errors
        from planledger.api.mcp.bridge import serve_bridge

        with answering_errors():
            anyio.run(serve_bridge, url)
        return
    from planledger.api.cli.common import answering_errors
    from planledger.api.mcp.handshake import take_wire

    wire = take_wire()  # the program claimed it before parsing the arguments, if it could
    if not wire.first:
        return  # the client went away before saying anything
    with answering_errors():
        _serve_embedded(db, lease_default, wire)


def _serve_embedded(db: str | None, lease_default: int | None, wire: "Wire") -> None:
    import anyio

    from planledger.api.identity import Identity
    from planledger.api.logs import configure_logging
    from planledger.api.mcp.server import build_server
    from planledger.api.runtime import open_runtime
    from planledger.api.service import Service
    from planledger.api.settings import load_settings

    configure_logging()  # before the MCP server is built: it would install its own
    settings = load_settings(db=db, lease_default=lease_default)
    runtime = open_runtime(settings.db, checkpoints=True)
    try:
        identity = Identity(runtime.secret, settings.admin_token)
        server = build_server(Service(runtime, settings, identity), single_connection=True)
        anyio.run(_serve, server, wire)
    finally:
        runtime.close()


async def _serve(server: "LedgerMCP", wire: "Wire") -> None:
    """The SDK's stdio transport and server loop, on our streams."""
    from mcp.server.stdio import stdio_server

    async with _streams(wire) as (stdin, stdout), stdio_server(stdin, stdout) as (read, write):
        await server.run(read, write, server.create_initialization_options())


@asynccontextmanager
async def _streams(wire: "Wire") -> AsyncIterator[tuple[Any, Any]]:
    """stdin and stdout for the SDK: on the event loop where both are pipes or sockets,
    else (a file, a terminal: a terminal left non-blocking breaks the shell after us)
    through the SDK's worker threads."""
    first = wire.first.decode("utf-8", errors="replace")
    if not (_is_pipe(wire.reader) and _is_pipe(wire.writer)):
        import anyio

        stdin = _Replaying(first, TextIOWrapper(wire.reader, encoding="utf-8",
                                                errors="replace"))
        stdout = _Dropping(wire.answered, TextIOWrapper(wire.writer, encoding="utf-8"))
        yield anyio.wrap_file(cast(IO[str], stdin)), anyio.wrap_file(cast(IO[str], stdout))
        return
    loop = asyncio.get_running_loop()
    lines = asyncio.StreamReader(limit=_line_limit())
    # What the handshake's buffered reader read past its first line comes first.
    os.set_blocking(wire.reader.fileno(), False)
    lines.feed_data(cast(Any, wire.reader).read1(1 << 20) or b"")
    reading, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(lines),
                                              wire.reader)
    writing, pipe = await loop.connect_write_pipe(_WritePipe, wire.writer)
    try:
        yield _LoopLines(first, lines), _LoopOut(wire.answered, writing, pipe)
    finally:
        reading.close()
        writing.close()  # what the pipe has not taken yet is written first
        with contextlib.suppress(TimeoutError):  # a client that never reads again
            await asyncio.wait_for(asyncio.shield(pipe.closed), CLOSING_SECONDS)


def _is_pipe(stream: Any) -> bool:
    mode = os.fstat(stream.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _line_limit() -> int:
    """The longest message read: an HTTP request's body limit (a longer line is passed
    by, as the SDK passes by a line that does not parse)."""
    from planledger.api.http.limits import MAX_BODY_BYTES

    return MAX_BODY_BYTES


class _LoopLines:
    """stdin for the SDK, read on the event loop: the line already read first."""

    def __init__(self, first: str, lines: asyncio.StreamReader) -> None:
        self._first: str | None = first
        self._lines = lines

    def __aiter__(self) -> "_LoopLines":
        return self

    async def __anext__(self) -> str:
        if self._first is not None:
            first, self._first = self._first, None
            return first
        try:
            read = await self._lines.readline()
        except ValueError:  # longer than the limit: skipped, handed on as a line that
            return "\n"     # does not parse (which the SDK passes by)
        if not read:
            raise StopAsyncIteration
        return read.decode("utf-8", errors="replace")


class _WritePipe(asyncio.Protocol):
    """The write end's state: `drained` while the pipe takes more (so a client that reads
    slowly holds the writer back, as a blocking write did), `closed` once it is gone."""

    def __init__(self) -> None:
        self.drained = asyncio.Event()
        self.drained.set()
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def pause_writing(self) -> None:
        self.drained.clear()

    def resume_writing(self) -> None:
        self.drained.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.drained.set()
        if not self.closed.done():
            self.closed.set_result(None)


class _LoopOut:
    """stdout for the SDK, written on the event loop, but for its answer to the
    `initialize` answered already."""

    def __init__(self, answered: Any, transport: asyncio.WriteTransport,
                 pipe: _WritePipe) -> None:
        self._answered = answered
        self._transport = transport
        self._pipe = pipe

    async def write(self, text: str) -> int:
        if self._answered is not None and _answers(self._answered, text):
            self._answered = None
        else:
            self._transport.write(text.encode("utf-8"))
        return len(text)

    async def flush(self) -> None:
        await self._pipe.drained.wait()


class _Replaying:
    """stdin for the SDK: the line already read (and answered, if `initialize`) first."""

    def __init__(self, first: str, rest: TextIOWrapper) -> None:
        self._first: str | None = first
        self._rest = rest

    def readline(self) -> str:
        if self._first is not None:
            line, self._first = self._first, None
            return line
        return self._rest.readline()


class _Dropping:
    """stdout for the SDK: every message but its own answer to the `initialize` answered
    already (the SDK writes one message per write)."""

    def __init__(self, answered: Any, out: TextIOWrapper) -> None:
        self._answered = answered
        self._out = out

    def write(self, text: str) -> int:
        if self._answered is not None and _answers(self._answered, text):
            self._answered = None
            return len(text)
        return self._out.write(text)

    def flush(self) -> None:
        self._out.flush()


def _answers(answered: Any, text: str) -> bool:
    """Whether the message `text` is an answer to the request `answered`."""
    try:
        message = json.loads(text)
    except ValueError:
        return False
    return (isinstance(message, dict) and message.get("id") == answered
            and ("result" in message or "error" in message))
