"""Exactly one winner under real concurrency, on an SQLite file and on PostgreSQL.

OS processes (each with its own store and connection pool) and threads race for the same
step round after round; agents work through a plan; the log is the judge.
"""

import multiprocessing as mp
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest

from planledger.api.runtime import open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from tests.support import OPERATOR
from tests.support.postgres import fresh_schema
from tests.support.processes import processes

ROUNDS = 20
BARRIER_TIMEOUT = 120
Report = tuple[str, list[tuple[str, str, str]]]


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store several processes share: an SQLite file, or a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield str(tmp_path / "ledger.sqlite")
    else:
        with fresh_schema(pool_size=1, max_overflow=1) as url:
            yield url


def _claim_rounds(db: str, step_ids: list[str], barrier: Barrier, out: Any) -> None:
    """One agent process: each round, wait for everyone, then claim that round's step."""
    runtime = open_runtime(db)
    session = runtime.ledger.start_session(f"pid-{mp.current_process().pid}")
    results = []
    for step_id in step_ids:
        barrier.wait(BARRIER_TIMEOUT)
        try:
            runtime.ledger.claim(step_id, session.id)
            results.append((step_id, "won", session.id))
        except errors.AlreadyClaimed as bounce:
            results.append((step_id, "bounced", bounce.holder))
    out.put((session.id, results))
    runtime.close()


def _work_through(db: str, step_ids: list[str], seed: int, barrier: Barrier, out: Any) -> None:
    """One agent process: claim steps in its own random order, completing each before the next."""
    runtime = open_runtime(db)
    session = runtime.ledger.start_session(f"worker-{seed}")
    order = list(step_ids)
    random.Random(seed).shuffle(order)
    won = []
    barrier.wait(BARRIER_TIMEOUT)
    for step_id in order:
        try:
            runtime.ledger.claim(step_id, session.id)
        except (errors.AlreadyClaimed, errors.Closed):
            continue
        won.append(step_id)
        runtime.ledger.complete(step_id, session.id)
    out.put((session.id, won))
    runtime.close()


def _run_processes(agents: int, target: Callable[..., None],
                   args: Callable[[int, Barrier, Any], tuple[Any, ...]]) -> list[Any]:
    """Start `agents` processes released together by a barrier; their reports."""
    ctx = processes()
    barrier, out = ctx.Barrier(agents), ctx.Queue()
    procs = [ctx.Process(target=target, args=args(i, barrier, out)) for i in range(agents)]
    for p in procs:
        p.start()
    reports = [out.get(timeout=BARRIER_TIMEOUT) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    return reports


def _seed_independent_steps(db: str, count: int) -> list[str]:
    runtime = open_runtime(db)
    _, step_ids = runtime.ledger.create_plan(
        "race", "Race", steps=[NewStep(f"step {i}") for i in range(count)]
    , actor=OPERATOR)
    runtime.close()
    return list(step_ids)


def _log(db: str) -> list[object]:
    runtime = open_runtime(db)
    notes = runtime.store.recorder.select_notifications(start=1, limit=100_000)
    events = [runtime.store.mapper.to_domain_event(n) for n in notes]
    runtime.close()
    return events


def _check_one_winner_per_round(
    db: str, step_ids: list[str], reports: list[Report], agents: int
) -> None:
    for step_id in step_ids:
        outcomes = [r for _, results in reports for r in results if r[0] == step_id]
        winners = [who for _, kind, who in outcomes if kind == "won"]
        assert len(winners) == 1, f"step {step_id}: winners {winners}"
        bounced_names = [who for _, kind, who in outcomes if kind == "bounced"]
        assert bounced_names == [winners[0]] * (agents - 1)
    log = _log(db)
    claims = Counter(e.originator_id for e in log if isinstance(e, ev.StepClaimed))
    bounces = Counter(e.step_id for e in log if isinstance(e, ev.ClaimBounced))
    assert all(claims[s] == 1 for s in step_ids)
    assert all(bounces[s] == agents - 1 for s in step_ids)


def test_sixteen_processes_claim_one_step_exactly_one_wins_each_round(db: str) -> None:
    step_ids = _seed_independent_steps(db, ROUNDS)
    reports = _run_processes(16, _claim_rounds, lambda _, b, out: (db, step_ids, b, out))
    _check_one_winner_per_round(db, step_ids, reports, 16)


def test_eight_threads_claim_one_step_exactly_one_wins_each_round(db: str) -> None:
    step_ids = _seed_independent_steps(db, ROUNDS)
    runtime = open_runtime(db)
    agents = 8
    barrier = threading.Barrier(agents)
    sessions = [runtime.ledger.start_session(f"thread-{i}").id for i in range(agents)]

    def agent(session_id: str) -> Report:
        results = []
        for step_id in step_ids:
            barrier.wait(BARRIER_TIMEOUT)
            try:
                runtime.ledger.claim(step_id, session_id)
                results.append((step_id, "won", session_id))
            except errors.AlreadyClaimed as bounce:
                results.append((step_id, "bounced", bounce.holder))
        return session_id, results

    with ThreadPoolExecutor(agents) as pool:
        reports = list(pool.map(agent, sessions))
    runtime.close()
    _check_one_winner_per_round(db, step_ids, reports, agents)


def test_eight_processes_over_fifty_steps_win_each_step_exactly_once(db: str) -> None:
    step_ids = _seed_independent_steps(db, 50)
    reports = _run_processes(8, _work_through, lambda i, b, out: (db, step_ids, i, b, out))
    wins = Counter(step for _, won in reports for step in won)
    assert sorted(wins) == sorted(step_ids) and set(wins.values()) == {1}
    _check_nobody_holds_two_at_once(db)


def _check_nobody_holds_two_at_once(db: str) -> None:
    held: dict[str, set[str]] = {}
    for event in _log(db):
        if isinstance(event, ev.StepClaimed):
            holding = held.setdefault(event.session_id or "", set())
            holding.add(event.originator_id)
            assert len(holding) == 1, f"{event.session_id} held {holding} at once"
        elif isinstance(event, ev.StepCompleted):
            held[event.session_id or ""].discard(event.originator_id)
