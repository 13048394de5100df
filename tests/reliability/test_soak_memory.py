"""A short soak in one process: the memory a server keeps grows with its open work, not
with its history. `python -m planledger.bench soak` is the long one, against a real server's
resident set size.

Agents plan, claim and complete every step (each write with an Idempotency-Key) and end
their sessions, so plans finish while the log grows. tracemalloc counts what the process
keeps (deterministic, unlike a resident set size): traced from the end of a warm-up, and
measured over the second half, when everything the process holds for its open work (the
last plans to finish, the store's states) has been made afresh inside the traced run, so
what it let go of counts too. What the second half kept must stay under the soak's goal,
1 MiB per 10,000 events, and under half of what, in the same run, a read model alone keeps
over the same events when it never lets a finished plan go (as every read model did before
plans retired).
"""

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import open_runtime
from planledger.api.settings import Settings
from planledger.bench.soak import GOAL_MIB_PER_10K, MIB, Cycles
from planledger.ledger.store import EventStore
from planledger.projections.log import page_after
from planledger.projections.readmodel import ReadModel
from planledger.projections.view import FINISHED_KEPT
from tests.support import LOCAL

STEPS = 4  # small plans: many finish in a short run
WARM_UP = FINISHED_KEPT + 4  # cycles untraced: finished plans retire from here on
HALF = FINISHED_KEPT + 8  # cycles in each traced half: more than the plans kept in full
NEVER = 10**9  # finished plans kept in full by the baseline: all of them


def test_memory_follows_open_work_not_the_log(tmp_path: Path) -> None:
    runtime = open_runtime(str(tmp_path / "ledger.sqlite"), checkpoints=True)
    try:
        app = create_app(runtime, Settings(db=runtime.db))
        agent = Cycles(TestClient(app, base_url=LOCAL), "agent",
                       steps=STEPS)
        for _ in range(WARM_UP):
            agent.cycle()
        marks: list[int] = []

        def cycles() -> None:
            marks.append(runtime.store.log_end())
            for _ in range(HALF):
                agent.cycle()

        server = kept_in_second(cycles, cycles)
        start, end = marks[1], runtime.store.log_end()
        keeping = ReadModel(runtime.store, runtime.reads.clock, finished_kept=NEVER)
        baseline = kept_in_second(lambda: fold_until(keeping, runtime.store, start),
                                  keeping.catch_up)
    finally:
        runtime.close()
    server_mib, baseline_mib = (kept * 10_000 / (end - start) / MIB
                                for kept in (server, baseline))
    print(f"kept per 10,000 events: {server_mib:.3f} MiB by the server; {baseline_mib:.3f} "
          f"MiB by a read model keeping every plan ({end - start:,} events measured)")
    assert server_mib <= GOAL_MIB_PER_10K
    assert server_mib <= baseline_mib / 2


def kept_in_second(first: Callable[[], object], second: Callable[[], object]) -> int:
    """Bytes kept alive by `second`, both traced: what it let go of that `first` made
    counts against what it made (cycles collected before each count)."""
    gc.collect()
    tracemalloc.start()
    try:
        first()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        second()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def fold_until(model: ReadModel, store: EventStore, position: int) -> None:
    while model.position < position:
        model.apply_notifications(page_after(store, model.position, stop=position))
