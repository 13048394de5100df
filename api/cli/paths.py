"""Path reservations on the command line: `claim --path`, and `paths check` (who holds
what)."""

from typing import Annotated

import typer

from planledger.api.cli.options import DbOption, JsonOption, UrlOption

paths_app = typer.Typer(help="Path reservations: who holds which paths.",
                        no_args_is_help=True)

PathOption = Annotated[list[str] | None, typer.Option(
    "--path", metavar="GLOB", help="A path to reserve with the claim, exclusively, beside the "
    "step's own (a glob from the repository root; repeat for more).")]
SharedPathOption = Annotated[list[str] | None, typer.Option(
    "--shared-path", metavar="GLOB", help="A path to reserve with the claim, shared with "
    "other shared reservations (repeat for more).")]


@paths_app.command("check")
def check(patterns: Annotated[list[str] | None, typer.Argument(
              metavar="[GLOB]...", help="Globs: the live reservations they overlap.")] = None,
          files: Annotated[list[str] | None, typer.Option(
              "--file", metavar="PATH", help="A file path, taken literally: the live "
              "reservations that cover it (repeat for more).")] = None,
          exclusive_only: Annotated[bool, typer.Option(
              "--exclusive-only", help="Leave shared reservations out.")] = False,
          but: Annotated[str | None, typer.Option(
              "--but", metavar="SESSION", help="Leave this session's reservations out.")
          ] = None,
          db: DbOption = None, url: UrlOption = None, json_out: JsonOption = False) -> None:
    """Who holds what: the live reservations GLOBs overlap or --file paths fall under
    (every live one when none are given), each with its holder, step and the patterns met.

    Exits 3 when one is found with --exclusive-only (something would refuse the paths)."""
    from planledger.api.cli import render
    from planledger.api.cli.common import EXIT_BOUNCED, emit, open_client

    with open_client(db, url) as client:
        found = client.check_paths(patterns or [], files or [], exclusive_only, but)
        emit(found, json_out, render.paths_found)
    if exclusive_only and found.reserved:
        raise typer.Exit(EXIT_BOUNCED)

