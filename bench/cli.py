"""`planledger bench`: the benchmark harness (`python -m planledger.bench`) as a verb."""

from planledger.api.cli.grammar import Values


def bench(v: Values) -> int:
    """Every word after `bench` goes to the harness untouched (`--smoke claims`, `--help`)."""
    from planledger.bench.__main__ import main

    return main(list(v["args"]))
