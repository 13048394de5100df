"""`planledger db backup` of a live SQLite store: how long it takes, and what writers see.

A store of 200,000 events (smoke: 5,000) is written straight to the log
(bench.ledger_log). Figures: the online backup's time against a plain file copy of the
same (checkpointed) database file, the baseline; the restore's time; and the latency of
writes (sessions started, one transaction each) while a backup runs, against the same
writes alone. Goal: writes go on during a backup, none waits for it to end (the slowest
<= 0.5x the backup's time; SQLite's WAL lets them commit while the backup reads); the
times inform.
"""

import shutil
import statistics
import threading
import time
from pathlib import Path

from planledger.api.runtime import open_runtime
from planledger.bench.ledger_log import LogBuilder
from planledger.bench.timing import Figure, scratch_dir
from planledger.infra.sqlite_backup import backup, restore


def _fill(db: str, events: int) -> None:
    runtime = open_runtime(db)
    try:
        log = LogBuilder(runtime.store)
        session = log.session("filler")
        while log.count < events:
            for step in log.plan(f"p{log.count}", [[]] * 50):
                log.claim(step, session)
                log.complete(step, session)
        log.flush()
    finally:
        runtime.close()


def _write_latencies(db: str, stop: threading.Event, least: int) -> list[float]:
    """Seconds per write, writing until `stop` is set and at least `least` were timed."""
    runtime = open_runtime(db)
    found: list[float] = []
    try:
        while not stop.is_set() or len(found) < least:
            started = time.perf_counter()
            runtime.ledger.start_session("writer")
            found.append(time.perf_counter() - started)
    finally:
        runtime.close()
    return found


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def run(smoke: bool = False) -> list[Figure]:
    events = 5_000 if smoke else 200_000
    with scratch_dir("backup") as where:
        db = str(where / "ledger.sqlite")
        _fill(db, events)
        alone_stop = threading.Event()
        alone_stop.set()
        alone = _write_latencies(db, alone_stop, 300)

        stop = threading.Event()
        during: list[float] = []
        writer = threading.Thread(target=lambda: during.extend(_write_latencies(db, stop, 50)))
        writer.start()
        started = time.perf_counter()
        copied = backup(db, str(where / "backup.sqlite"))
        backup_s = time.perf_counter() - started
        stop.set()
        writer.join()

        started = time.perf_counter()
        shutil.copyfile(db, where / "plain-copy.sqlite")  # the baseline: bytes, no snapshot
        copy_s = time.perf_counter() - started
        started = time.perf_counter()
        restore(str(where / "backup.sqlite"), str(where / "restored" / "ledger.sqlite"),
                replace=False)
        restore_s = time.perf_counter() - started
        size_mb = Path(db).stat().st_size / 1e6
    return [
        Figure(f"backup of {copied.events:,} events ({size_mb:.0f} MB)", backup_s * 1000, "ms",
               "plain file copy", copy_s * 1000, lower_is_better=True),
        Figure("restore of the same", restore_s * 1000, "ms", "plain file copy",
               copy_s * 1000, lower_is_better=True),
        Figure("slowest write during a backup", max(during) * 1000, "ms", "the backup's time",
               backup_s * 1000, goal=0.5, lower_is_better=True, rounds=len(during)),
        Figure("write p99 during a backup", _p99(during) * 1000, "ms", "write p99 alone",
               _p99(alone) * 1000, lower_is_better=True, rounds=len(during)),
        Figure("write median during a backup", statistics.median(during) * 1000, "ms",
               "write median alone", statistics.median(alone) * 1000, lower_is_better=True,
               rounds=len(during)),
    ]
