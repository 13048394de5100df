"""Run benchmarks and print one table: figures, same-run baselines, ratios, goals.

    python -m planledger.bench                 # every benchmark, full size
    python -m planledger.bench --smoke         # tiny sizes (a minute; no verdicts)
    python -m planledger.bench rebuild ready_latency --json out.json
    python -m planledger.bench --list
    python -m planledger.bench soak --seconds 600   # a timed benchmark's length

A benchmark is a module in this package with `run(smoke: bool = False) -> list[Figure]`
(see bench/README.md), listed in BENCHMARKS; its name is the module's name.
"""

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import Any

try:
    from planledger.bench import (
        answer_bytes,
        backup,
        claim_order,
        claims,
        console,
        console_streams,
        contention,
        disk_full,
        failover,
        heartbeat,
        http,
        mcp,
        memory,
        pg_outage,
        postgres,
        ready_latency,
        rebuild,
        soak,
        startup,
        swarm,
        timeline,
    )
except ModuleNotFoundError as missing:  # httpx or matplotlib: not the product's own needs
    raise SystemExit(f"the benchmarks need {missing.name}, which the package installs only "
                     "with its bench extra: pip install 'planledger[bench]'") from None
from planledger.bench.apart import run_apart
from planledger.bench.table import rows, table

# Every benchmark, by its module's name, in name order: a new one is added here.
BENCHMARKS: dict[str, ModuleType] = {
    module.__name__.rpartition(".")[2]: module
    for module in (answer_bytes, backup, claim_order, claims, console, console_streams, contention,
                   disk_full, failover, heartbeat, http, mcp, memory, pg_outage, postgres,
                   ready_latency, rebuild, soak, startup, swarm, timeline)
}


def summary(module: ModuleType) -> str:
    return (module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m planledger.bench",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks they run")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--seconds", type=float,
                        help="how long timed benchmarks run (those whose run takes `seconds`)")
    args = parser.parse_args(argv)
    benchmarks = BENCHMARKS
    if args.list:
        for name, module in benchmarks.items():
            print(f"{name:16} {summary(module)}")
        return 0
    unknown = sorted(set(args.names) - set(benchmarks))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(benchmarks)}")
    found: list[list[str]] = []
    dumped: dict[str, Any] = {}
    for name in args.names or list(benchmarks):
        started = time.perf_counter()
        print(f"running {name}{' (smoke)' if args.smoke else ''}...", file=sys.stderr, flush=True)
        figures = run_apart(name, benchmarks[name].run, args.smoke, seconds=args.seconds)
        print(f"  {name} took {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
        found += rows(name, figures, judged=not args.smoke)
        dumped[name] = [{**asdict(f), "ratio": f.ratio, "met": f.met} for f in figures]
    print(table(found))
    if args.json:
        args.json.write_text(json.dumps(dumped, indent=2))
    return 1 if any(row[-1].startswith("MISSED") for row in found) else 0


if __name__ == "__main__":
    sys.exit(main())
