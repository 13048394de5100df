"""The options every command shares, as typed aliases.

Apart from api.cli.common (which loads the clients and the schemas) so that a command can
declare them and start before loading anything else: `planledger mcp` answers its client's
`initialize` first and loads the store and the MCP stack after (issue 19).
"""

from typing import Annotated

import typer

DbOption = Annotated[str | None, typer.Option(
    "--db", envvar="PLANLEDGER_DB", help="The embedded store: an SQLite path (default "
    "./.planledger/ledger.sqlite), 'memory', or a postgresql:// URL.")]
UrlOption = Annotated[str | None, typer.Option(
    "--url", envvar="PLANLEDGER_URL", help="A running server (e.g. http://127.0.0.1:8765); "
    "without it the command works on the embedded store directly.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
SessionOption = Annotated[str | None, typer.Option(
    "--session", envvar="PLANLEDGER_SESSION", help="The session to act for (embedded store).")]
TokenOption = Annotated[str | None, typer.Option(
    "--token", envvar="PLANLEDGER_TOKEN", help="The session's token (from `session start`); "
    "needed with --url.", show_default=False)]
LeaseOption = Annotated[int | None, typer.Option(
    "--lease", help="Lease in seconds (the server's default when omitted).")]
FenceOption = Annotated[int | None, typer.Option(
    "--fence", help="The fence your claim was granted: refused if it is stale.")]
NoteOption = Annotated[str | None, typer.Option(
    "--note", help="A handoff note left with it, for whoever picks the step up next.")]
