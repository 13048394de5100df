"""`planledger mcp`: the MCP tools for one agent over stdin/stdout.

For clients that start their tools as processes (Claude Code's and Codex CLI's stdio
servers). The process is the agent's one connection, so the session it starts acts for
every later call. Nothing but the protocol goes to stdout; messages go to stderr.
"""

from typing import Annotated

import typer

from planledger.api.cli.common import DbOption, UrlOption, answering_errors


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
    import anyio  # the MCP stack loads only here: other commands start faster without it

    with answering_errors():
        if url:
            from planledger.api.mcp.bridge import serve_bridge

            anyio.run(serve_bridge, url)
        else:
            _serve_embedded(db, lease_default)


def _serve_embedded(db: str | None, lease_default: int | None) -> None:
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
        anyio.run(server.run_stdio_async)
    finally:
        runtime.close()
