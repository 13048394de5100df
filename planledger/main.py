"""The program: the `planledger` command line (the `planledger` script, `python -m
planledger`), assembled here from each part's commands. The interfaces' (api.cli) never
import the replays' or the benchmarks', which stand beside them (ARCHITECTURE.md): the
three meet only here, and nothing imports this module.

A call imports only the command it names (`planledger claim …` loads api/cli/work.py and
what it needs, not the web server, the MCP stack or the replays), and `planledger --help`
lists the commands from their table without importing any: agents that drive the ledger
through a shell pay the start-up on every call (bench/startup.py measures it). Before any
of that, api.cli.direct answers the calls it can without typer: every call to a server
(`--url`), and the embedded store's work and reads.
"""

import sys
from typing import TYPE_CHECKING, Any

from planledger.api.cli import ENTRIES as INTERFACES
from planledger.api.cli import HELP, Entry

if TYPE_CHECKING:
    import typer

ENTRIES = (
    *INTERFACES,
    Entry("replay", "planledger.replays.cli:app",
          "Recordings of the log: export, import, timeline, re-execute, explore."),
    Entry("demo", "planledger.replays.cli:demo",
          "Seed the seed's plan auth-refresh (steps 1-4 done); with --race, two agents on "
          "real threads race for step 5: one wins, the other bounces naming it and takes "
          "step 6."),
    Entry("audit", "planledger.replays.audit_cli:audit_app",
          "Tamper evidence: check the log's hash chain."),
    Entry("bench", "planledger.bench.cli:bench",
          "Run the benchmarks: same arguments as `python -m planledger.bench` (see "
          "bench/README.md).", settings="SETTINGS"),
)
OPTIONS = (
    ("--install-completion", "Install completion for the current shell."),
    ("--show-completion", "Show completion for the current shell, to copy it or customize "
                          "the installation."),
    ("--help", "Show this message and exit."),
)


def build(entries: tuple[Entry, ...] = ENTRIES) -> "typer.Typer":
    """The command line with `entries` (all of them by default)."""
    import typer

    app = typer.Typer(help=HELP, no_args_is_help=True)

    @app.callback()
    def _root() -> None:
        """planledger: one dependency-aware queue of plan steps for many agents."""

    for entry in entries:
        entry.add_to(app)
    return app


def usage(width: int = 88) -> str:
    """`planledger --help`, from the table: the options and every command's summary."""
    import textwrap  # here: no other call needs it

    def rows(pairs: list[tuple[str, str]]) -> list[str]:
        column = max(len(name) for name, _ in pairs) + 4
        return [textwrap.fill(text, width, initial_indent=f"  {name:<{column - 2}}",
                              subsequent_indent=" " * column) for name, text in pairs]

    return "\n".join([
        "Usage: planledger [OPTIONS] COMMAND [ARGS]...", "", f"  {HELP}", "", "Options:",
        *rows(list(OPTIONS)), "", "Commands:",
        *rows([(entry.name, entry.summary) for entry in ENTRIES]), "",
        "Run 'planledger COMMAND --help' for a command's arguments and options.", ""])


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] == "--help":
        sys.stdout.write(usage())
        raise SystemExit(0 if args else 2)  # no arguments is a usage error, as click says
    named = [entry for entry in ENTRIES if entry.name == args[0]]
    for entry in named:  # first: `mcp` answers initialize before anything more is loaded
        entry.prepare(args[1:])
    from planledger.api.cli import direct

    answered = direct.answer(args)  # a call it answers without typer (api.cli.direct)
    if answered is not None:
        raise SystemExit(answered)
    # Anything else (an unknown command, --show-completion) goes to the whole command line.
    build(tuple(named) if named else ENTRIES)(args, prog_name="planledger")


def __getattr__(name: str) -> Any:
    """`app`: the whole command line (for tests and tools), assembled when asked for."""
    if name == "app":
        app = build()
        globals()["app"] = app
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
