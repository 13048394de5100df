"""1. Claim throughput, embedded: claim + complete cycles per second on the SQLite store.

Baseline, same run and same disk: bare `sqlite3` doing what a cycle must do at the least,
two single-row transactions (the claim's event, then the completion's), into a table
shaped like the store's, with the store's own journal mode and synchronous setting.
Goal: at least half the bare rate.
"""

import sqlite3
from pathlib import Path

from api.runtime import open_runtime
from bench.timing import Figure, paired_medians, rate, scratch_dir
from ledger.application import NewStep

TITLE = "claim + complete cycles/s (SQLite)"
GOAL = 0.5
# A stored claim or completion event is about this long (JSON with two timestamps).
PAYLOAD = b"x" * 190
TOPIC = "ledger.domain.events:StepClaimed"


def ledger_cycles(directory: Path, cycles: int) -> tuple[float, dict[str, str]]:
    """Cycles/s through the Ledger, and the store's journal and synchronous settings."""
    runtime = open_runtime(str(directory / "ledger.sqlite"))
    try:
        ledger = runtime.ledger
        _, steps = ledger.create_plan("bench", "Bench",
                                      steps=[NewStep(f"step {i}") for i in range(cycles)])
        session = ledger.start_session("bench").id

        def work() -> None:
            for step in steps:
                ledger.claim(step, session)
                ledger.complete(step, session)

        return rate(cycles, work), store_pragmas(runtime.store.recorder)
    finally:
        runtime.close()


def store_pragmas(recorder: object) -> dict[str, str]:
    """The journal mode and synchronous level of the store's own connection."""
    datastore = recorder.datastore  # type: ignore[attr-defined]
    with datastore.transaction(commit=False) as cursor:
        cursor.execute("PRAGMA journal_mode")
        journal = str(cursor.fetchone()[0])
        cursor.execute("PRAGMA synchronous")
        synchronous = str(cursor.fetchone()[0])
    return {"journal_mode": journal, "synchronous": synchronous}


def bare_cycles(directory: Path, cycles: int, pragmas: dict[str, str]) -> float:
    """Cycles/s of two autocommitted single-row INSERT transactions per cycle."""
    conn = sqlite3.connect(directory / "bare.sqlite", isolation_level=None)
    try:
        conn.execute(f"PRAGMA journal_mode={pragmas['journal_mode']}")
        conn.execute(f"PRAGMA synchronous={pragmas['synchronous']}")
        conn.execute("CREATE TABLE stored_events (originator_id TEXT, originator_version "
                     "INTEGER, topic TEXT, state BLOB, PRIMARY KEY (originator_id, "
                     "originator_version))")
        rows = [(f"{i:026d}", version, TOPIC, PAYLOAD)
                for i in range(cycles) for version in (2, 3)]

        def work() -> None:
            for row in rows:
                conn.execute("BEGIN")
                conn.execute("INSERT INTO stored_events VALUES (?,?,?,?)", row)
                conn.execute("COMMIT")

        return rate(cycles, work)
    finally:
        conn.close()


def run(smoke: bool = False) -> list[Figure]:
    cycles, rounds = (20, 1) if smoke else (400, 7)
    pragmas: dict[str, str] = {}

    def measure() -> float:
        with scratch_dir("claims") as directory:
            value, found = ledger_cycles(directory, cycles)
            pragmas.update(found)
            return value

    def baseline() -> float:
        with scratch_dir("claims-bare") as directory:
            if not pragmas:  # learn the store's settings before the first bare round
                pragmas.update(ledger_cycles(directory, 1)[1])
            return bare_cycles(directory, cycles, pragmas)

    value, base, n = paired_medians(rounds, measure, baseline)
    bare = (f"bare sqlite3: 2 single-row transactions per cycle "
            f"(journal {pragmas['journal_mode']}, synchronous {pragmas['synchronous']})")
    return [Figure(TITLE, value, "cycles/s", bare, base, GOAL, rounds=n)]
