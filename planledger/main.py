"""The program: the `planledger` command line (the `planledger` script, `python -m
planledger`), assembled here from each part's commands. The interfaces' (api.cli) never
import the replays' or the benchmarks', which stand beside them (ARCHITECTURE.md): the
three meet only here, and nothing imports this module."""

import typer

from planledger.api import cli as interfaces
from planledger.bench import cli as bench_cli
from planledger.replays import audit_cli
from planledger.replays import cli as replays_cli

app = typer.Typer(help=interfaces.HELP, no_args_is_help=True)


@app.callback()
def _root() -> None:
    """planledger: one dependency-aware queue of plan steps for many agents."""


interfaces.register(app)
app.add_typer(replays_cli.app, name="replay")  # planledger replay … (replays/cli.py)
app.command("demo")(replays_cli.demo)  # planledger demo [--race] (replays/cli.py)
app.add_typer(audit_cli.audit_app, name="audit")  # planledger audit verify (replays/audit_cli.py)
app.command("bench", context_settings=bench_cli.SETTINGS)(bench_cli.bench)  # bench/cli.py


def main() -> None:
    app()
