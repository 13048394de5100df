"""9. Memory: resident memory of a server holding 100,000 steps and 1,000,000 events.

The log is written straight to an SQLite file (bench.ledger_log): 100 plans of 1,000 steps,
every step claimed, half of them completed, the held half heartbeated until the log holds
1,000,000 events. Then `planledger serve` starts on it, as deployed, and answers one
query (which folds the whole log into its read model); its resident set size is read
from /proc. Baseline, same run: the same server on an empty log after the same query.
The figure informs (no goal); bytes per event put it in proportion.

Then it is asked for a plan's timeline (read from the log on demand: that plan's events
only, then told what the read model applies), and its RSS read again. Then the server
stops (saving its read model's checkpoint) and starts again on the same log: its first
query, resumed from the checkpoint, next to the first start's full fold. Last, a
command-line `ready` on the same log: from the checkpoint the server left, next to the
same command with none.
"""

import subprocess
import time
from pathlib import Path

import httpx

from planledger.bench.ledger_log import LogBuilder
from planledger.bench.servers import PLANLEDGER, ROOMY, start_replica
from planledger.bench.timing import Figure, scratch_dir
from planledger.infra.persistence import open_event_store
from planledger.infra.sqlite_checkpoints import checkpoint_path

PLANS, STEPS_PER_PLAN, EVENTS = 100, 1000, 1_000_000
SESSIONS = 100
LOAD_TIMEOUT = 600.0


def build_log(db: Path, plans: int, steps_per_plan: int, events: int) -> int:
    """Write the log; returns how many events it holds."""
    store = open_event_store(str(db))
    try:
        builder = LogBuilder(store)
        agents = [builder.session(f"agent {i}") for i in range(SESSIONS)]
        held = []
        for p in range(plans):
            for i, step in enumerate(builder.plan(f"plan-{p}", [[]] * steps_per_plan)):
                agent = agents[i % SESSIONS]
                builder.claim(step, agent)
                if i % 2:
                    builder.complete(step, agent)
                else:
                    held.append((step, agent))
        beat = 0
        while builder.count < events and held:
            step, agent = held[beat % len(held)]
            builder.heartbeat(step, agent)
            beat += 1
        builder.flush()
        return builder.count
    finally:
        store.close()


def resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def served_rss(db: Path) -> tuple[int, float, int]:
    """RSS of `planledger serve` on `db` after one query, the seconds that query took (the
    read model folding the log), and its RSS once a plan's timeline was asked for too."""
    server = start_replica(str(db), ROOMY)
    try:
        started = time.perf_counter()
        httpx.get(f"{server.url}/api/plans", timeout=LOAD_TIMEOUT).raise_for_status()
        loaded = time.perf_counter() - started
        queried = resident_bytes(server.process.pid)
        httpx.get(f"{server.url}/api/timeline", params={"plan": "plan-0", "limit": 100},
                  timeout=LOAD_TIMEOUT)  # a plan the empty log lacks answers 404: fine
        return queried, loaded, resident_bytes(server.process.pid)
    finally:
        server.stop()


def run(smoke: bool = False) -> list[Figure]:
    plans, per_plan, events = (2, 50, 1000) if smoke else (PLANS, STEPS_PER_PLAN, EVENTS)
    with scratch_dir("memory") as directory:
        written = build_log(directory / "full.sqlite", plans, per_plan, events)
        empty_rss, _, _ = served_rss(directory / "empty.sqlite")
        full_rss, loaded, with_timeline = served_rss(directory / "full.sqlite")
        _, resumed, _ = served_rss(directory / "full.sqlite")  # a restart: from the checkpoint
        cli_resumed = cli_ready_seconds(directory / "full.sqlite")  # the server's checkpoint
        views = checkpoint_path(str(directory / "full.sqlite"))
        views.rename(views.with_name(f"{views.name}.aside"))
        cli_folded = cli_ready_seconds(directory / "full.sqlite")  # none: it folds the log
    mib = 1024 * 1024
    steps = plans * per_plan
    return [
        Figure(f"server RSS holding {steps:,} steps and {written:,} events", full_rss / mib,
               "MiB", "same server, empty log", empty_rss / mib),
        Figure("resident bytes per event held", (full_rss - empty_rss) / written, "B/event"),
        Figure("the same server once a plan's timeline was asked for", with_timeline / mib,
               "MiB", "before that", full_rss / mib),
        Figure(f"first query folding {written:,} events", written / loaded, "events/s"),
        Figure("a restarted server's first query (resumed from its checkpoint)", resumed,
               "s", "the first start's, folding the whole log", loaded, lower_is_better=True),
        Figure("`planledger ready` on that log, from the server's checkpoint", cli_resumed,
               "s", "the same command with no checkpoint (folding the log)", cli_folded,
               lower_is_better=True),
    ]


def cli_ready_seconds(db: Path) -> float:
    """Seconds a command-line `ready` takes on the embedded store `db`, process start
    included (what an agent calling the CLI waits)."""
    started = time.perf_counter()
    subprocess.run([PLANLEDGER, "ready", "plan-0", "--db", str(db), "--json"], check=True,
                   capture_output=True, timeout=LOAD_TIMEOUT)
    return time.perf_counter() - started
