"""Overlapping path reservations never land together, under real concurrency.

Threads (one store, each agent its own session) and OS processes (each its own store on the
same database) claim different steps whose declared paths overlap, round after round,
released together by a barrier; the winners work their step and complete it. The log is the
judge: replayed event by event, no reservation is ever made while another session's live
one conflicts with it.
"""

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.paths import PathSpec, conflict
from planledger.ledger.domain.reservations import specs
from tests.support import OPERATOR
from tests.support.postgres import fresh_schema
from tests.support.processes import processes

ROUNDS = 8
TIMEOUT = 120
# Every step touches the shared module, some exclusively, some shared with others that
# also only read it; each its own file too. Pairs (i, i+1) meet on shared/x.go.
PATHS = [
    (PathSpec("shared/**"), PathSpec("a.go")),
    (PathSpec("shared/x.go"), PathSpec("b.go")),
    (PathSpec("shared/*.go", "shared"), PathSpec("c.go")),
    (PathSpec("**/x.go", "shared"), PathSpec("d.go")),
    (PathSpec("shared/x.go", "shared"), PathSpec("a.go", "shared")),
    (PathSpec("docs/"),),  # meets none of the others: its claims always land
]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "memory":
        yield "memory"
    elif request.param == "sqlite":
        yield str(tmp_path / "ledger.sqlite")
    else:
        with fresh_schema(pool_size=2, max_overflow=2) as url:
            yield url


def _seed(runtime: Runtime, rounds: int) -> list[list[str]]:
    """One plan per round, each with a step per entry of PATHS."""
    made = []
    for r in range(rounds):
        _, step_ids = runtime.ledger.create_plan(
            f"round-{r}", f"Round {r}",
            steps=[NewStep(f"step {i}", paths=p) for i, p in enumerate(PATHS)], actor=OPERATOR)
        made.append([str(s) for s in step_ids])
    return made


def _agent(runtime: Runtime, name: str, rounds: list[list[str]], index: int,
           wait: Callable[[], Any]) -> list[str]:
    """Each round, wait for everyone, claim this agent's step; complete what it won."""
    session = runtime.ledger.start_session(name).id
    won = []
    for steps in rounds:
        wait()
        try:
            runtime.ledger.claim(steps[index], session)
        except errors.PathsHeld:
            wait()
            continue
        won.append(steps[index])
        wait()  # everyone has tried: nothing this round is released before
        runtime.ledger.complete(steps[index], session)
    return won


def _process_agent(db: str, rounds: list[list[str]], index: int, barrier: Barrier,
                   out: Any) -> None:
    runtime = open_runtime(db)
    out.put(_agent(runtime, f"process-{index}", rounds, index,
                   lambda: barrier.wait(TIMEOUT)))
    runtime.close()


def test_threads_claiming_overlapping_paths_never_hold_them_together(db: str) -> None:
    runtime = open_runtime(db)
    rounds = _seed(runtime, ROUNDS)
    barrier = threading.Barrier(len(PATHS))
    with ThreadPoolExecutor(len(PATHS)) as pool:
        wins = list(pool.map(lambda i: _agent(runtime, f"thread-{i}", rounds, i,
                                              lambda: barrier.wait(TIMEOUT)),
                             range(len(PATHS))))
    log = [e for _, e in runtime.store.log_after(0, 100_000)]
    runtime.close()
    _judge(log, wins)


def test_processes_claiming_overlapping_paths_never_hold_them_together(db: str) -> None:
    if db == "memory":
        pytest.skip("processes share no in-memory store")
    runtime = open_runtime(db)
    rounds = _seed(runtime, ROUNDS)
    runtime.close()
    ctx = processes()
    barrier, out = ctx.Barrier(len(PATHS)), ctx.Queue()
    procs = [ctx.Process(target=_process_agent, args=(db, rounds, i, barrier, out))
             for i in range(len(PATHS))]
    for p in procs:
        p.start()
    wins = [out.get(timeout=TIMEOUT) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    runtime = open_runtime(db)
    log = [e for _, e in runtime.store.log_after(0, 100_000)]
    runtime.close()
    _judge(log, wins)


def _judge(log: list[Any], wins: list[list[str]]) -> None:
    assert sum(map(len, wins)) >= ROUNDS * 2  # the docs step, and a first taker, each round
    bounced = [e for e in log if isinstance(e, ev.PathsBounced)]
    assert bounced, "the agents raced on overlapping paths"
    _check_no_conflicting_reservations(log)


def _check_no_conflicting_reservations(log: list[Any]) -> None:
    """Fold the log: each reservation, as it is made, meets no other session's live one."""
    claims: dict[str, tuple[str, int, datetime]] = {}  # step -> holder, fence, lease end
    reserved: dict[str, tuple[str, int, tuple[PathSpec, ...]]] = {}
    ended: set[str] = set()
    for event in log:
        if isinstance(event, ev.StepClaimed | ev.LeaseRenewed):
            claims[event.originator_id] = (event.session_id or "", event.fence,
                                           event.expires_at)
        elif isinstance(event, ev.StepCompleted | ev.StepReleased | ev.StepDropped):
            claims.pop(event.originator_id, None)
        elif isinstance(event, ev.SessionEnded):
            ended.add(event.originator_id)
        elif isinstance(event, ev.PathsReserved):
            mine = specs(event.paths)
            for step, (holder, fence, paths) in reserved.items():
                live = claims.get(step)
                if (step == event.step_id or live is None or live[:2] != (holder, fence)
                        or live[2] <= event.timestamp or holder in ended
                        or holder == event.session_id):
                    continue
                clash = [(m, t) for m in mine for t in paths if conflict(m, t)]
                assert not clash, f"{event.step_id} reserved {clash} while {step} held them"
            reserved[event.step_id] = (event.session_id or "", event.fence, mine)
