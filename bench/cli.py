"""`planledger bench`: the benchmark harness (`python -m planledger.bench`) as a CLI command."""

import typer

# Options go to the harness untouched (`planledger bench --smoke claims`, `--help`).
SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True,
            "help_option_names": []}


def bench(ctx: typer.Context) -> None:
    """Run the benchmarks: same arguments as `python -m planledger.bench` (see
    bench/README.md)."""
    from planledger.bench.__main__ import main

    raise typer.Exit(main(list(ctx.args)))
