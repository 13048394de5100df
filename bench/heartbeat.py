"""3. Heartbeat flatness: the cost of the 1,000th heartbeat of one claim against the first.

A heartbeat appends to the step's stream, so a step heartbeated for hours has a long
stream; loading it must not grow with it (step streams are snapshotted every 100 events,
see `ledger.store`). Two figures, each a ratio of late to early in the same run:
- warm: the holder's own process heartbeating (heartbeats 951-1,000 against 1-50);
- cold: a fresh process's first call on the step (a new runtime, empty cache) after 1,000
  heartbeats against after one.
Goal: within 1.2x.
"""

import statistics
import time
from pathlib import Path

from planledger.api.runtime import open_runtime
from planledger.bench.timing import OPERATOR, Figure, scratch_dir
from planledger.ledger.application import NewStep

GOAL = 1.2
WINDOW = 50


def _timed_heartbeats(db: str, count: int) -> tuple[list[float], str, str]:
    """Seconds each of `count` heartbeats took; the step and the holder's session."""
    runtime = open_runtime(db)
    try:
        ledger = runtime.ledger
        _, (step,) = ledger.create_plan(f"hb-{count}", "Heartbeats", steps=[NewStep("held")],
                                           actor=OPERATOR)
        session = ledger.start_session("holder").id
        ledger.claim(step, session)
        costs = []
        for _ in range(count):
            started = time.perf_counter()
            ledger.heartbeat(step, session)
            costs.append(time.perf_counter() - started)
        return costs, step, session
    finally:
        runtime.close()


def _cold_heartbeat(db: str, step: str, session: str) -> float:
    """Seconds of a heartbeat made by a fresh runtime (nothing cached)."""
    runtime = open_runtime(db)
    try:
        started = time.perf_counter()
        runtime.ledger.heartbeat(step, session)
        return time.perf_counter() - started
    finally:
        runtime.close()


def _cold_pair(db: str, short: tuple[str, str], long: tuple[str, str],
               tries: int) -> tuple[float, float]:
    """Median cold heartbeats on the short and the long stream, tried alternately so both
    see the same neighbours."""
    shorts, longs = [], []
    for _ in range(tries):
        shorts.append(_cold_heartbeat(db, *short))
        longs.append(_cold_heartbeat(db, *long))
    return statistics.median(shorts), statistics.median(longs)


def window(count: int) -> int:
    return min(WINDOW, count // 2)


def _round(directory: Path, count: int, tries: int) -> tuple[float, float, float, float]:
    """(early warm, late warm, cold after one, cold after `count`) medians in seconds."""
    db = str(directory / "heartbeat.sqlite")
    costs, step, session = _timed_heartbeats(db, count)
    w = window(count)
    early, late = statistics.median(costs[:w]), statistics.median(costs[-w:])
    _, short_step, short_session = _timed_heartbeats(db, 1)
    cold_short, cold_long = _cold_pair(db, (short_step, short_session), (step, session), tries)
    return early, late, cold_short, cold_long


def run(smoke: bool = False) -> list[Figure]:
    count, tries, rounds = (20, 2, 1) if smoke else (1000, 15, 5)
    results = []
    for _ in range(rounds):
        with scratch_dir("heartbeat") as directory:
            results.append(_round(directory, count, tries))
    early, late, cold_short, cold_long = (statistics.median(col) for col in zip(*results,
                                                                                strict=True))
    micro, w = 1e6, window(count)
    return [
        Figure(f"heartbeat #{count - w + 1}-{count} (warm), median", late * micro, "us",
               f"heartbeat #1-{w}", early * micro, GOAL, lower_is_better=True, rounds=rounds),
        Figure(f"fresh process's heartbeat after {count} heartbeats", cold_long * micro, "us",
               "after 1 heartbeat", cold_short * micro, GOAL, lower_is_better=True,
               rounds=rounds),
    ]
