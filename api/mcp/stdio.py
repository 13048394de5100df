"""`planledger mcp`: the MCP tools for one agent over stdin/stdout.

For clients that start their tools as processes (Claude Code's and Codex CLI's stdio
servers). The process is the agent's one connection, so the session it starts acts for
every later call. Nothing but the protocol goes to stdout; messages go to stderr.

On the embedded store the client's `initialize` is answered first (api.mcp.handshake,
which the program calls before parsing the arguments) and only then are the MCP SDK
loaded and the store opened: a client waits for that answer, often
for several servers started at once, and the rest takes seconds (issue 19). The SDK is
then handed the same `initialize` and its answer dropped, so it serves the session whole.
"""

import json
from io import TextIOWrapper
from typing import IO, TYPE_CHECKING, Annotated, Any, cast

import typer

from planledger.api.cli.options import DbOption, UrlOption

if TYPE_CHECKING:
    from planledger.api.mcp.handshake import Wire
    from planledger.api.mcp.server import LedgerMCP


def mcp(
    db: DbOption = None,
    url: UrlOption = None,
    lease_default: Annotated[int | None, typer.Option(
        "--lease-default", envvar="PLANLEDGER_LEASE_DEFAULT",
        help="Lease of a claim that names none, in seconds (default 900; embedded store "
        "only: a server applies its own).")] = None,
) -> None:
    """Serve the MCP tools to one agent over stdio: on the embedded store, or relayed to
    the running server at --url (its /mcp endpoint)."""
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
    from planledger.api.mcp.server import build_server
    from planledger.api.runtime import open_runtime
    from planledger.api.service import Service
    from planledger.api.settings import load_settings

    settings = load_settings(db=db, lease_default=lease_default)
    runtime = open_runtime(settings.db, checkpoints=True)
    try:
        identity = Identity(runtime.secret, settings.admin_token)
        server = build_server(Service(runtime, settings, identity), single_connection=True)
        stdin = _Replaying(wire.first.decode("utf-8", errors="replace"),
                           TextIOWrapper(wire.reader, encoding="utf-8", errors="replace"))
        stdout = _Dropping(wire.answered, TextIOWrapper(wire.writer, encoding="utf-8"))
        anyio.run(_serve, server, stdin, stdout)
    finally:
        runtime.close()


async def _serve(server: "LedgerMCP", stdin: "_Replaying", stdout: "_Dropping") -> None:
    """What the SDK's `run_stdio_async` does, on our streams."""
    import anyio
    from mcp.server.stdio import stdio_server

    # The SDK's server behind LedgerMCP: the SDK names no public way to it.
    lowlevel = server._lowlevel_server
    async with stdio_server(anyio.wrap_file(cast(IO[str], stdin)),
                            anyio.wrap_file(cast(IO[str], stdout))) as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


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
        if self._answered is not None and self._answers(text):
            self._answered = None
            return len(text)
        return self._out.write(text)

    def _answers(self, text: str) -> bool:
        try:
            message = json.loads(text)
        except ValueError:
            return False
        return (isinstance(message, dict) and message.get("id") == self._answered
                and ("result" in message or "error" in message))

    def flush(self) -> None:
        self._out.flush()
