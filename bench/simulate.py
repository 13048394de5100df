"""Run the deterministic simulator (bench.simulation) from the command line.

    python -m planledger.bench.simulate                  # 1,000,000 actions, seed 1, 2 workers
    python -m planledger.bench.simulate --seed 7 --ops 20000000  # a longer run
    python -m planledger.bench.simulate --store sqlite --ops 20000
    python -m planledger.bench.simulate --world 7000021  # replay one world, print its history

A run prints how many worlds, actions and ledger commands it ran, and how fast. On a
violation it prints the run's seed, the failing world's seed, the violation and a shrunk
history, and exits 1; `--world <seed>` replays that world exactly.
"""

import argparse
import sys

from planledger.bench.simulation.run import (
    WORLD_ACTIONS,
    RunResult,
    replay,
    run_world,
    shrink,
    simulate,
)
from planledger.ledger.storage import MEMORY

STORES = {"memory": MEMORY, "sqlite": "sqlite"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m planledger.bench.simulate",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1, help="the run's seed (default 1)")
    parser.add_argument("--ops", type=int, default=1_000_000,
                        help="simulated actions to run in all (default 1,000,000)")
    parser.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--actions", type=int, default=WORLD_ACTIONS,
                        help=f"actions per world (default {WORLD_ACTIONS})")
    parser.add_argument("--store", choices=sorted(STORES), default="memory",
                        help="the event store under the ledger (default memory)")
    parser.add_argument("--world", type=int, help="replay the world of this seed alone")
    parser.add_argument("--shrink-seconds", type=float, default=60.0)
    args = parser.parse_args(argv)
    store = STORES[args.store]
    if args.world is not None:
        return _one_world(args.world, args.actions, store, args.shrink_seconds)
    result = simulate(args.seed, args.ops, args.workers, args.actions, store)
    print(_summary(result))
    if result.failed is None:
        return 0
    print(f"seed {args.seed}: world {result.failed.seed} broke an invariant "
          f"(replay it: python -m planledger.bench.simulate --world {result.failed.seed} "
          f"--actions {args.actions} --store {args.store})")
    return _one_world(result.failed.seed, args.actions, store, args.shrink_seconds)


def _summary(result: RunResult) -> str:
    return (f"seed {result.seed}: {result.worlds:,} worlds, {result.actions:,} actions "
            f"({result.commands:,} ledger commands) in {result.seconds:.1f} s: "
            f"{result.per_second:,.0f} actions/s, {result.per_cpu_second:,.0f} per CPU "
            f"second ({result.cpu_seconds:.1f} CPU s); violations: "
            f"{0 if result.failed is None else 1}")


def _one_world(seed: int, actions: int, store: str, shrink_seconds: float) -> int:
    found = run_world(seed, actions, store)
    if found.violation is None:
        print(f"world {seed}: {found.actions} actions, no violation")
        return 0
    print(f"world {seed}: violation after {found.actions} actions:\n  {found.violation}")
    shrunk = shrink(seed, found.history, found.violation, store, shrink_seconds)
    violation, world = replay(seed, shrunk, store, tracing=True)
    print(f"shrunk history ({len(shrunk)} of {found.actions} actions), replayed:")
    for plan, step in world.steps:
        print(f"  step {step} is {plan}/{world.steps.index((plan, step))}")
    for line in world.trace or []:
        print(f"  {line}")
    print(f"  violation: {violation}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
