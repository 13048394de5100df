"""2. Contention: 2, 4, 8 and 16 agent processes racing over 1,000 ready steps.

Each agent is an OS process with its own runtime on one SQLite file, calling
`claim_next` (the fleet's call: pick and claim the first ready step) until nothing is
left. Reported per agent count: successful claims/s and bounces/s (from the log), next
to one agent alone on the same steps in the same run; and a check, from the log, that
every step was won exactly once. Process start-up is outside the clock (a barrier).
"""

import multiprocessing as mp
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

from planledger.api.runtime import open_runtime
from planledger.bench.timing import OPERATOR, Figure, scratch_dir
from planledger.ledger.application import NewStep
from planledger.ledger.domain import events as ev

PLAN = "race"
BARRIER_TIMEOUT = 300


@dataclass(frozen=True)
class RaceResult:
    agents: int
    claims_per_s: float
    bounces_per_s: float
    each_won_once: bool


def _agent(db: str, barrier: Barrier, out: Any) -> None:
    """One agent process: claim the next ready step until the plan has none left."""
    runtime = open_runtime(db)
    session = runtime.ledger.start_session(f"agent-{mp.current_process().pid}").id
    runtime.reads.catch_up()
    barrier.wait(BARRIER_TIMEOUT)
    started, won = time.monotonic(), 0
    while runtime.ledger.claim_next(PLAN, session) is not None:
        won += 1
    out.put((started, time.monotonic(), won))
    runtime.close()


def _seed(db: str, steps: int) -> None:
    runtime = open_runtime(db)
    runtime.ledger.create_plan(PLAN, "Race", steps=[NewStep(f"step {i}") for i in range(steps)],
                               actor=OPERATOR)
    runtime.close()


def _audit(db: str, steps: int) -> tuple[bool, int]:
    """Whether the log shows each step claimed exactly once, and how many claims bounced."""
    runtime = open_runtime(db)
    try:
        claims: Counter[str] = Counter()
        bounces = position = 0
        while notes := runtime.store.recorder.select_notifications(
                start=position, limit=10_000, inclusive_of_start=False):
            for note in notes:
                event = runtime.store.mapper.to_domain_event(note)
                claims.update([event.originator_id] if isinstance(event, ev.StepClaimed) else [])
                bounces += isinstance(event, ev.ClaimBounced)
            position = notes[-1].id
        return len(claims) == steps and set(claims.values()) == {1}, bounces
    finally:
        runtime.close()


def race(directory: Path, agents: int, steps: int) -> RaceResult:
    db = str(directory / f"race-{agents}.sqlite")
    _seed(db, steps)
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(agents), ctx.Queue()
    procs = [ctx.Process(target=_agent, args=(db, barrier, out)) for _ in range(agents)]
    for proc in procs:
        proc.start()
    reports = [out.get(timeout=BARRIER_TIMEOUT) for _ in procs]
    for proc in procs:
        proc.join(BARRIER_TIMEOUT)
    elapsed = max(r[1] for r in reports) - min(r[0] for r in reports)
    once, bounces = _audit(db, steps)
    once = once and sum(r[2] for r in reports) == steps
    return RaceResult(agents, steps / elapsed, bounces / elapsed, once)


def races(agent_counts: list[int], steps: int, rounds: int) -> list[RaceResult]:
    """Median claims/s and bounces/s per agent count over `rounds` interleaved rounds."""
    results: dict[int, list[RaceResult]] = {n: [] for n in agent_counts}
    for _ in range(rounds):
        with scratch_dir("contention") as directory:
            for agents in agent_counts:
                results[agents].append(race(directory, agents, steps))
    return [RaceResult(n, statistics.median(r.claims_per_s for r in rs),
                       statistics.median(r.bounces_per_s for r in rs),
                       all(r.each_won_once for r in rs))
            for n, rs in results.items()]


def run(smoke: bool = False) -> list[Figure]:
    counts, steps, rounds = ([1, 2], 20, 1) if smoke else ([1, 2, 4, 8, 16], 1000, 3)
    results = races(counts, steps, rounds)
    if not all(r.each_won_once for r in results):
        raise AssertionError("a step was won more or less than once: see the log's claims")
    alone = results[0].claims_per_s
    figures = [Figure("1 agent alone: claims/s", alone, "claims/s", rounds=rounds)]
    for result in results[1:]:
        figures += [
            Figure(f"{result.agents} agents racing: successful claims/s", result.claims_per_s,
                   "claims/s", "1 agent alone, same steps", alone, rounds=rounds),
            Figure(f"{result.agents} agents racing: bounces/s", result.bounces_per_s,
                   "bounces/s", rounds=rounds),
        ]
    return figures
