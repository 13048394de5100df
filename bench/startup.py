"""Start-up: a command-line call on a small embedded store, as an agent's shell runs it.

`planledger plan list --json` on an SQLite file holding one plan, process start included,
next to the same interpreter starting and doing nothing (`python -c pass`), alternated;
medians. Informs (no goal): agents run these commands by the hundred, so what a command
imports before it does anything (a database driver it does not use, an HTTP client it
does not need) is paid on every call.
"""

import statistics
import subprocess
import sys
import time

from planledger.bench.servers import PLANLEDGER
from planledger.bench.timing import Figure, scratch_dir


def _seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - started


def run(smoke: bool = False) -> list[Figure]:
    rounds = 1 if smoke else 9
    with scratch_dir("startup") as directory:
        db = str(directory / "ledger.sqlite")
        plan = directory / "plan.yaml"
        plan.write_text("slug: p\ntitle: P\nsteps:\n  - title: one\n  - title: two\n")
        subprocess.run([PLANLEDGER, "plan", "create", str(plan), "--db", db], check=True,
                       capture_output=True, timeout=120)
        command = [PLANLEDGER, "plan", "list", "--db", db, "--json"]
        bare, commands = [], []
        for _ in range(rounds):
            bare.append(_seconds([sys.executable, "-c", "pass"]))
            commands.append(_seconds(command))
    return [Figure("`planledger plan list` on a small SQLite store, process included",
                   statistics.median(commands) * 1000, "ms",
                   "the same interpreter starting and doing nothing",
                   statistics.median(bare) * 1000, lower_is_better=True, rounds=rounds)]
