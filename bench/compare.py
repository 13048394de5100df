"""Before and after: the claim path of this working tree against another revision's.

    python -m planledger.bench.compare HEAD                 # uncommitted changes against HEAD
    python -m planledger.bench.compare 98bcf94 --rounds 6

A git worktree of the revision and this tree run the same claim + complete workload on
SQLite at the same time, one process each, so what the machine's neighbours and its disk
do meanwhile hits both alike (on these noisy machines, runs one after the other swung
+-20% while a change was worth 5-10%). Each process reports per cycle its user CPU (the
Python a change touches; steadier than wall time, since the two share one disk), all its
CPU, and wall time. Printed: every round, then medians and this tree's ratio to the
revision's. Change-by-change figures in bench/findings.md were taken this way.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

KEYS = ("user_us", "cpu_us", "wall_us")
WARM_UP = 200  # cycles before timing: first claims of a fresh store read more

# Run with the tree under test first on the path; it uses only the long-standing public
# calls (open_runtime, create_plan, start_session, claim, complete), so old revisions run it
# (the plan's author, a session, passed as `actor=`, which every revision takes), imported
# from wherever the revision keeps them.
WORKLOAD = """
import json, os, resource, sys, tempfile, time
from pathlib import Path
if Path(sys.path[0], "planledger").is_dir():  # this tree: everything under one root
    from planledger.api.runtime import open_runtime
    from planledger.ledger.application import NewStep
else:  # a revision from before the root: its folders were packages of their own
    from api.runtime import open_runtime
    from ledger.application import NewStep
cycles, warm, cpu = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
if cpu >= 0:
    os.sched_setaffinity(0, {cpu})
with tempfile.TemporaryDirectory(prefix="planledger-compare-") as scratch:
    runtime = open_runtime(str(Path(scratch) / "ledger.sqlite"))
    ledger = runtime.ledger
    session = ledger.start_session("bench").id
    _, steps = ledger.create_plan("bench", "Bench", actor=session,
                                  steps=[NewStep(f"step {i}") for i in range(warm + cycles)])
    for step in steps[:warm]:
        ledger.claim(step, session)
        ledger.complete(step, session)
    print("ready", flush=True)
    sys.stdin.readline()  # "go": both trees start their timed cycles together
    def user_time():
        return resource.getrusage(resource.RUSAGE_SELF).ru_utime
    user, cpu, wall = user_time(), time.process_time(), time.perf_counter()
    for step in steps[warm:]:
        ledger.claim(step, session)
        ledger.complete(step, session)
    per = 1e6 / cycles
    print(json.dumps({"user_us": (user_time() - user) * per,
                      "cpu_us": (time.process_time() - cpu) * per,
                      "wall_us": (time.perf_counter() - wall) * per}))
    runtime.close()
"""


def start_workload(tree: Path, cycles: int, cpu: int) -> subprocess.Popen[str]:
    """The workload with `tree`'s code first on the path, on processor `cpu` (-1: any),
    warmed up and waiting for "go"."""
    process = subprocess.Popen([sys.executable, "-c", WORKLOAD, str(cycles), str(WARM_UP),
                                str(cpu)],
                               cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        _, errors = process.communicate(timeout=60)
        raise SystemExit(f"the workload failed in {tree}:\n{errors.strip()}")
    return process


def finish_workload(process: subprocess.Popen[str]) -> dict[str, float]:
    out, errors = process.communicate(timeout=600)
    if process.returncode != 0:
        raise SystemExit(f"the workload failed:\n{errors.strip()}")
    figures: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return figures


def one_round(
    first: Path, second: Path, cycles: int, cpus: tuple[int, int]
) -> tuple[dict[str, float], ...]:
    """Both workloads, warmed up, then timed at the same moment; figures in that order."""
    processes = [start_workload(tree, cycles, cpu) for tree, cpu in zip((first, second), cpus,
                                                                       strict=True)]
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    return tuple(finish_workload(process) for process in processes)


def compare(here: Path, there: Path, rounds: int, cycles: int) -> dict[str, list[float]]:
    """Rounds of both trees' workloads side by side; per key, this tree's then the other's
    figures, in order. Which tree starts first, and on which of two processors each runs,
    alternate: one tree against itself, the first started ran up to 20% faster, and the
    two processors of a shared machine need not be alike."""
    found: dict[str, list[float]] = {f"{k}:{side}": [] for k in KEYS
                                     for side in ("here", "there")}
    processors = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    pinned = (processors[0], processors[1]) if len(processors) >= 2 else (-1, -1)
    for n in range(1, rounds + 1):
        cpus = pinned if n % 4 in (1, 2) else (pinned[1], pinned[0])
        if n % 2:
            mine, theirs = one_round(here, there, cycles, cpus)
        else:
            theirs, mine = one_round(there, here, cycles, cpus)
        for key in KEYS:
            found[f"{key}:here"].append(mine[key])
            found[f"{key}:there"].append(theirs[key])
        print(f"round {n}: " + "  ".join(
            f"{key} {theirs[key]:.0f} -> {mine[key]:.0f}" for key in KEYS), flush=True)
    return found


def report(found: dict[str, list[float]], revision: str) -> str:
    """Medians of each side, and the geometric mean of the rounds' own ratios: each round's
    two runs saw the same machine, so its ratio is the paired figure, and over rounds that
    alternate which tree went first, whatever going first is worth cancels out."""
    lines = [f"per claim + complete cycle, medians: {revision} -> this tree "
             f"(geometric mean of the rounds' ratios)"]
    for key in KEYS:
        there, here = found[f"{key}:there"], found[f"{key}:here"]
        ratios = [h / t for h, t in zip(here, there, strict=True) if h > 0 and t > 0]
        # a very short run can count no CPU time at all
        ratio = f"{statistics.geometric_mean(ratios):.3f}x" if ratios else "too short to count"
        lines.append(f"  {key:8s} {statistics.median(there):8.0f} -> "
                     f"{statistics.median(here):8.0f}  ({ratio})")
    return "\n".join(lines)


def worktree_of(revision: str, repo: Path, into: Path) -> Path:
    tree = into / "tree"
    added = subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", str(tree),
                            revision], capture_output=True, text=True, check=False)
    if added.returncode != 0:
        raise SystemExit(f"cannot check out {revision!r}: {added.stderr.strip()}")
    return tree


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("revision", help="what to compare this working tree against")
    parser.add_argument("--rounds", type=int, default=8,
                        help="rounds (made a multiple of 4: each tree goes first, and runs on "
                             "each processor, as often)")
    parser.add_argument("--cycles", type=int, default=2800)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.cycles < 1:
        parser.error("--rounds and --cycles must be at least 1")
    rounds = -(-args.rounds // 4) * 4
    here = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="planledger-compare-") as scratch:
        there = worktree_of(args.revision, here, Path(scratch))
        try:
            found = compare(here, there, rounds, args.cycles)
        finally:
            subprocess.run(["git", "-C", str(here), "worktree", "remove", "--force",
                            str(there)], capture_output=True, check=False)
    print(report(found, args.revision))


if __name__ == "__main__":
    main()
