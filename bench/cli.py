"""`planledger bench`: the benchmark harness (`python -m planledger.bench`) as a CLI command."""

import sys
from pathlib import Path

import typer

CHECKOUT = Path(__file__).resolve().parent.parent
# Options go to the harness untouched (`planledger bench --smoke claims`, `--help`).
SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True,
            "help_option_names": []}


def bench(ctx: typer.Context) -> None:
    """Run the benchmarks: same arguments as `python -m planledger.bench` (see bench/README.md)."""
    if str(CHECKOUT) not in sys.path:
        sys.path.insert(0, str(CHECKOUT))  # the benchmarks start servers with tests/support
    from planledger.bench.__main__ import main

    raise typer.Exit(main(list(ctx.args)))
