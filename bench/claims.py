"""1. Claim throughput, embedded: claim + complete cycles per second on the SQLite store.

Baseline, same run and same disk: bare `sqlite3` doing what a cycle must do at the least,
two single-row transactions (the claim's event, then the completion's), into a table
shaped like the store's, with the store's own journal mode and synchronous setting.
The two run in alternating blocks of a few dozen cycles (a commit's cost on a shared
disk swings within seconds, so longer stretches compare different disks); each side's
rate is the median of its blocks. Goal: at least half the bare rate.

Two more baselines split the gap: bare sqlite3 running the statements a command of ours
runs (BEGIN IMMEDIATE, the log's end, one INSERT of a row as long as a sealed event,
COMMIT): what the database alone costs us; and the store's own appends of the two events
(no reads, no decisions): what the library's write path costs before any rule of ours.
"""

import sqlite3
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from planledger.api.runtime import open_runtime
from planledger.bench.timing import OPERATOR, Figure, scratch_dir
from planledger.ledger.application import NewStep
from planledger.ledger.domain import events as ev

TITLE = "claim + complete cycles/s (SQLite)"
GOAL = 0.5
# An unsealed claim or completion event is about this long (JSON with two timestamps);
# the store's are 100-200 bytes longer (their chain hashes), which counts against us.
PAYLOAD = b"x" * 190
TOPIC = ev.StepClaimed.TOPIC


def store_pragmas(recorder: object) -> dict[str, str]:
    """The journal mode and synchronous level of the store's own connection."""
    file = recorder.file  # type: ignore[attr-defined]
    with file.transaction(commit=False) as cursor:
        cursor.execute("PRAGMA journal_mode")
        journal = str(cursor.fetchone()[0])
        cursor.execute("PRAGMA synchronous")
        synchronous = str(cursor.fetchone()[0])
    return {"journal_mode": journal, "synchronous": synchronous}


def sealed_length(store: object, step: str) -> int:
    """How long the stored claim and completion of `step` are, on average (bytes)."""
    stored = store.recorder.select_events(step)  # type: ignore[attr-defined]
    lengths = [len(s.state) for s in stored[-2:]]
    return sum(lengths) // len(lengths)


def bare_connection(path: Path, pragmas: dict[str, str]) -> sqlite3.Connection:
    """An autocommit connection to a table shaped like the store's, same settings."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA journal_mode={pragmas['journal_mode']}")
    conn.execute(f"PRAGMA synchronous={pragmas['synchronous']}")
    conn.execute("CREATE TABLE stored_events (originator_id TEXT, originator_version "
                 "INTEGER, topic TEXT, state BLOB, PRIMARY KEY (originator_id, "
                 "originator_version))")
    return conn


def _timed(block: Sequence[str], cycle: Callable[[str], None]) -> float:
    started = time.perf_counter()
    for item in block:
        cycle(item)
    return len(block) / (time.perf_counter() - started)


def interleaved(
    directory: Path, cycles: int, block: int
) -> tuple[float, float, float, float, dict[str, str]]:
    """Median block rates (cycles/s) of the Ledger, of bare sqlite3, of bare sqlite3 running
    our statements and of the store's bare appends of a cycle's two events, and the store's
    settings."""
    runtime = open_runtime(str(directory / "ledger.sqlite"))
    try:
        ledger = runtime.ledger
        _, steps = ledger.create_plan("bench", "Bench",
                                      steps=[NewStep(f"step {i}") for i in range(cycles)],
                                      actor=OPERATOR)
        session = ledger.start_session("bench").id
        pragmas = store_pragmas(runtime.store.recorder)
        conn = bare_connection(directory / "bare.sqlite", pragmas)
        shaped = bare_connection(directory / "shaped.sqlite", pragmas)
        ledger.claim(steps[0], session)
        ledger.complete(steps[0], session)
        sealed = b"x" * sealed_length(runtime.store, steps[0])
        steps = steps[1:]

        def ledger_cycle(step: str) -> None:
            ledger.claim(step, session)
            ledger.complete(step, session)

        def bare_cycle(key: str) -> None:
            for version in (2, 3):  # the claim's event, then the completion's
                conn.execute("BEGIN")
                conn.execute("INSERT INTO stored_events VALUES (?,?,?,?)",
                             (key, version, TOPIC, PAYLOAD))
                conn.execute("COMMIT")

        def shaped_cycle(key: str) -> None:
            for version in (2, 3):
                shaped.execute("BEGIN IMMEDIATE")
                shaped.execute("SELECT MAX(rowid) FROM stored_events").fetchone()
                shaped.execute("INSERT INTO stored_events VALUES (?,?,?,?)",
                               (key, version, TOPIC, sealed))
                shaped.execute("COMMIT")

        def append_cycle(key: str) -> None:
            now = datetime.now(UTC)
            runtime.store.append([ev.StepClaimed(key, 2, now, session, fence=1,
                                                 lease_seconds=900, expires_at=now)])
            runtime.store.append([ev.StepCompleted(key, 3, now, session, fence=1)])

        sides: list[tuple[Callable[[str], None], list[float]]] = [
            (ledger_cycle, []), (bare_cycle, []), (shaped_cycle, []), (append_cycle, [])]
        for start in range(0, cycles, block):
            chunk = steps[start:start + block]
            turn = start // block % len(sides)
            for cycle, rates in sides[turn:] + sides[:turn]:  # each goes first in turn
                rates.append(_timed([f"{cycle.__name__}-{s}" for s in chunk]
                                    if cycle is append_cycle else chunk, cycle))
        conn.close()
        shaped.close()
        ours, bare, shaped_rate, appends = (statistics.median(rates) for _, rates in sides)
        return ours, bare, shaped_rate, appends, pragmas
    finally:
        runtime.close()


def run(smoke: bool = False) -> list[Figure]:
    cycles, block, rounds = (30, 10, 1) if smoke else (1200, 30, 3)
    found = []
    for _ in range(rounds):
        with scratch_dir("claims") as directory:
            found.append(interleaved(directory, cycles, block))
    ours = statistics.median(f[0] for f in found)
    bare = statistics.median(f[1] for f in found)
    shaped = statistics.median(f[2] for f in found)
    appends = statistics.median(f[3] for f in found)
    pragmas, blocks = found[0][4], rounds * (cycles // block)
    return [
        Figure(TITLE, ours, "cycles/s",
               f"bare sqlite3: 2 single-row transactions per cycle (journal "
               f"{pragmas['journal_mode']}, synchronous {pragmas['synchronous']})",
               bare, GOAL, rounds=blocks),
        Figure(TITLE, ours, "cycles/s",
               "bare sqlite3 running our statements (BEGIN IMMEDIATE, log end, INSERT of a "
               "sealed event's length, COMMIT) x2", shaped, rounds=blocks),
        Figure(TITLE, ours, "cycles/s",
               "the store's own appends of the 2 events (no reads, no decisions)", appends,
               rounds=blocks),
    ]
