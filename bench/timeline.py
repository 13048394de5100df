"""A plan's timeline over HTTP, as the console reads it: whole once, then what came since.

One `planledger serve` on a log of 30 plans of 1,000 steps, claimed, half completed, the
rest heartbeated up to 300,000 events (bench.memory.build_log). Figures: the server's first
plan timeline (the read model's first fold of the log, then that plan's events read at
their positions), the same plan's whole timeline read again, and what came since
(`after=next_after`, the console's refresh on every change) next to the whole. Medians of
several reads; informs (no goal).
"""

import statistics
import time
from typing import Any

import httpx

from planledger.bench.memory import build_log
from planledger.bench.servers import ROOMY, start_replica
from planledger.bench.timing import Figure, scratch_dir

LOAD_TIMEOUT = 600.0


def _read(http: httpx.Client, **params: Any) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    answer = http.get("/api/timeline", params={"plan": "plan-0", **params})
    answer.raise_for_status()
    return time.perf_counter() - started, answer.json()


def run(smoke: bool = False) -> list[Figure]:
    plans, per_plan, events, rounds = (2, 50, 1000, 3) if smoke else (30, 1000, 300_000, 7)
    with scratch_dir("timeline") as directory:
        written = build_log(directory / "log.sqlite", plans, per_plan, events)
        server = start_replica(str(directory / "log.sqlite"), ROOMY)
        try:
            with httpx.Client(base_url=server.url, timeout=LOAD_TIMEOUT) as http:  # kept open
                first, whole = _read(http)
                wholes = [_read(http)[0] for _ in range(rounds)]
                since = [_read(http, after=whole["next_after"])[0] for _ in range(rounds)]
        finally:
            server.stop()
    ms = 1000
    entries = len(whole["entries"])
    return [
        Figure(f"a fresh server's first plan timeline ({written:,}-event log)", first, "s"),
        Figure(f"a plan's whole timeline ({entries:,} entries), read again",
               statistics.median(wholes) * ms, "ms"),
        Figure("what came since (after=next_after: the console's refresh)",
               statistics.median(since) * ms, "ms", "the plan's whole timeline",
               statistics.median(wholes) * ms, lower_is_better=True, rounds=rounds),
    ]
