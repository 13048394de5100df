"""Exactly one winner on PostgreSQL: 16 OS processes, each with its own connection pool, race
for one step, round after round; and 8 processes work through a plan, each step won once."""

import multiprocessing as mp
from collections import Counter

from tests.integration.test_claim_races import (
    BARRIER_TIMEOUT,
    ROUNDS,
    _check_log_has_one_claim_and_the_bounces,
    _check_nobody_holds_two_at_once,
    _check_one_winner_per_round,
    _claim_rounds,
    _seed_independent_steps,
    _work_through,
)
from tests.support.postgres import fresh_schema


def test_sixteen_processes_claim_one_step_on_postgres_exactly_one_wins_each_round() -> None:
    agents = 16
    with fresh_schema(pool_size=1, max_overflow=1) as url:
        step_ids = _seed_independent_steps(url, ROUNDS)
        ctx = mp.get_context("spawn")
        barrier, out = ctx.Barrier(agents), ctx.Queue()
        procs = [ctx.Process(target=_claim_rounds, args=(url, step_ids, barrier, out))
                 for _ in range(agents)]
        for p in procs:
            p.start()
        reports = [out.get(timeout=BARRIER_TIMEOUT) for _ in procs]
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
        _check_one_winner_per_round(step_ids, reports, agents)
        _check_log_has_one_claim_and_the_bounces(url, step_ids, agents)


def test_eight_processes_over_fifty_steps_on_postgres_win_each_step_exactly_once() -> None:
    with fresh_schema(pool_size=1, max_overflow=1) as url:
        step_ids = _seed_independent_steps(url, 50)
        ctx = mp.get_context("spawn")
        barrier, out = ctx.Barrier(8), ctx.Queue()
        procs = [ctx.Process(target=_work_through, args=(url, step_ids, seed, barrier, out))
                 for seed in range(8)]
        for p in procs:
            p.start()
        reports = [out.get(timeout=BARRIER_TIMEOUT) for _ in procs]
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
        wins = Counter(step for _, won in reports for step in won)
        assert sorted(wins) == sorted(step_ids) and set(wins.values()) == {1}
        _check_nobody_holds_two_at_once(url)
