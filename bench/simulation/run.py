"""Running many worlds from one seed, in parallel, and shrinking a failing one's history.

Each world's seed is derived from the run's seed and the world's number, so a run is the
same whatever the number of workers, and a failing world replays alone from its seed.
"""

import contextlib
import gc
import multiprocessing
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from planledger.bench.simulation.actions import Action
from planledger.bench.simulation.checks import Violation
from planledger.bench.simulation.faults import FaultyEventStore
from planledger.bench.simulation.world import World
from planledger.ledger.storage import MEMORY

WORLD_ACTIONS = 400


def world_seed(run_seed: int, number: int) -> int:
    return run_seed * 1_000_003 + number


@dataclass
class WorldResult:
    seed: int
    actions: int
    commands: int
    violation: str | None = None
    history: list[Action] = field(default_factory=list)
    cpu_seconds: float = 0.0  # the world's own, in its worker (on a shared machine, wall
    # time says more about the neighbours than about the simulator)


@dataclass
class RunResult:
    seed: int
    worlds: int = 0
    actions: int = 0
    commands: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the worlds' CPU time, summed over the workers
    failed: WorldResult | None = None

    @property
    def per_second(self) -> float:
        return self.actions / self.seconds if self.seconds else 0.0

    @property
    def per_cpu_second(self) -> float:
        return self.actions / self.cpu_seconds if self.cpu_seconds else 0.0


def run_world(seed: int, actions: int = WORLD_ACTIONS, store: str = MEMORY) -> WorldResult:
    """Grow the world from its seed for `actions` actions, checking as it goes."""
    world = World(seed, store)
    try:
        world.generate(actions)
        world.checks.full()
    except Violation as violation:
        return WorldResult(seed, len(world.history), world.commands, str(violation),
                           list(world.history))
    finally:
        world.close()
    return WorldResult(seed, len(world.history), world.commands)


def _run_numbered(job: tuple[int, int, int, str]) -> WorldResult:
    run_seed, number, actions, store = job
    started = time.process_time()
    result = run_world(world_seed(run_seed, number), actions, store)
    result.cpu_seconds = time.process_time() - started
    return result


def simulate(run_seed: int, ops: int, workers: int = 2, actions: int = WORLD_ACTIONS,
             store: str = MEMORY) -> RunResult:
    """Worlds of `actions` actions each until `ops` actions ran, or one broke an
    invariant (the first to fail, by world number, is reported)."""
    result = RunResult(run_seed)
    started = time.perf_counter()
    count = max(1, -(-ops // actions))
    jobs = [(run_seed, n, actions, store) for n in range(count)]
    with _frozen_heap():
        for done in _results(jobs, workers):
            result.worlds += 1
            result.actions += done.actions
            result.commands += done.commands
            result.cpu_seconds += done.cpu_seconds
            if done.violation is not None:
                result.failed = done
                break
    result.seconds = time.perf_counter() - started
    return result


@contextlib.contextmanager
def _frozen_heap() -> Iterator[None]:
    """What is loaded before the run (the product's modules, pydantic's schemas) lives as
    long as it: the collector leaves it out of every collection meanwhile (~5% of a run),
    and forked workers share it untouched."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _results(jobs: list[tuple[int, int, int, str]], workers: int) -> Iterator[WorldResult]:
    if workers <= 1:
        yield from map(_run_numbered, jobs)
        return
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        yield from pool.imap(_run_numbered, jobs, chunksize=4)


def replay(seed: int, history: list[Action], store: str = MEMORY, tracing: bool = False,
           store_class: type[FaultyEventStore] = FaultyEventStore) -> tuple[str | None, World]:
    """Run the world on exactly these actions; the violation it meets (or None)."""
    world = World(seed, store, tracing=tracing, store_class=store_class)
    try:
        world.replay(history)
        world.checks.full()
    except Violation as violation:
        return str(violation), world
    finally:
        world.close()
    return None, world


def _same_failure(a: str, b: str | None) -> bool:
    """Two violations of one invariant (their messages agree up to the first colon)."""
    return b is not None and a.split(":", 1)[0] == b.split(":", 1)[0]


def shrink(seed: int, history: list[Action], violation: str, store: str = MEMORY,
           seconds: float = 60.0,
           store_class: type[FaultyEventStore] = FaultyEventStore) -> list[Action]:
    """A shorter history that still breaks the same invariant: chunks of actions are
    taken out while it does (delta debugging), until single actions cannot be, or time
    is up."""
    deadline = time.monotonic() + seconds
    current = list(history)
    chunk = max(1, len(current) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        start, removed = 0, False
        while start < len(current) and time.monotonic() < deadline:
            candidate = current[:start] + current[start + chunk:]
            found = (replay(seed, candidate, store, store_class=store_class)[0]
                     if candidate else None)
            if _same_failure(violation, found):
                current, removed = candidate, True
            else:
                start += chunk
        if not removed:
            chunk //= 2
    return current
