"""Ready latency: `ReadModel.ready` on a 10,000-step plan with a deep dependency graph.

The plan: 10,000 steps in 200 layers of 50, each step waiting on 2 steps of the layer
before (200 deep). The first 100 layers are done; of the next layer 16 steps are held,
4 were claimed with leases that have lapsed, and 30 are open: ready lists 34 steps, 4 of
them naming their lapsed holder. Each query is the call the ledger and the APIs make,
`ReadModel.ready(plan)` on the SQLite store: it pulls the log first (one indexed SELECT)
and judges the in-flight steps at the clock; one heartbeat is appended before every 10th
query, so the model keeps applying events between queries.

Figures (same run, same machine):
- median and p99 against the full scan the minimal read model did (the claim rule on
  every open or in-progress step of the plan); goal: a median of 1 ms or less;
- the same plan in a log padded with heartbeats and bounces to 1,000,000 events against
  the plan's own log (~30,000 events); goal: no slower (median within 1.2x); once as the
  APIs call it (pulling the log first: one SELECT on the bigger table) and once on a
  model a follower keeps current (the query itself, touching no database).
"""

import statistics
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from planledger.bench.ledger_log import LogBuilder, StillClock, layered_graph
from planledger.bench.timing import Figure, scratch_dir
from planledger.infra.persistence import open_event_store
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.store import EventStore
from planledger.projections.readmodel import ReadModel

PLAN = PlanSlug("deep")
HELD, LAPSED = 16, 4


@dataclass
class Setup:
    store: EventStore
    builder: LogBuilder
    model: ReadModel
    held: list[tuple[StepId, SessionId]]
    catch_up_rate: float
    built: int  # events in the log before any query (queries add heartbeats)


def build(db: Path, steps: int, width: int, pad_to: int) -> Setup:
    """The plan's log (padded with heartbeats and bounces up to `pad_to` events), and a
    read model caught up with it."""
    store = open_event_store(str(db))
    builder = LogBuilder(store)
    ids = builder.plan(PLAN, layered_graph(steps, width, fan_in=2))
    agents = [builder.session(f"agent {i}") for i in range(HELD + LAPSED + 1)]
    half = (steps // width // 2) * width
    for i, step in enumerate(ids[:half]):
        builder.claim(step, agents[i % HELD])
        builder.complete(step, agents[i % HELD])
    frontier = ids[half: half + width]
    held = list(zip(frontier[:HELD], agents[:HELD], strict=True))
    for step, agent in held:
        builder.claim(step, agent, lease=7 * 86400)
    for step, agent in zip(frontier[HELD: HELD + LAPSED], agents[HELD: HELD + LAPSED], strict=True):
        builder.claim(step, agent, lease=1)
    _pad(builder, held, agents[-1], pad_to)
    builder.flush()
    model = ReadModel(store, StillClock(builder.now + timedelta(seconds=5)))
    started = time.perf_counter()
    model.catch_up()
    rate = builder.count / (time.perf_counter() - started)
    return Setup(store, builder, model, held, rate, builder.count)


def _pad(builder: LogBuilder, held: list[tuple[StepId, SessionId]], late: SessionId,
         pad_to: int) -> None:
    while builder.count < pad_to:
        step, agent = held[builder.count % len(held)]
        if builder.count % 50:
            builder.heartbeat(step, agent, lease=7 * 86400)
        else:
            builder.bounce(step, late, agent)


def latencies(setup: Setup, queries: int, mode: str = "pull") -> list[float]:
    """Milliseconds per query; a heartbeat is appended (untimed) before every 10th.

    `pull`: `ready` as the APIs call it, pulling the log first (the heartbeat is applied
    inside the timed call); `followed`: a model a follower keeps current (the heartbeat is
    applied before the clock starts, the query touches no database); `scan`: the full scan.
    """
    setup.model.pull_on_read = mode != "followed"
    found = []
    for i in range(queries):
        if i % 10 == 0:
            step, agent = setup.held[i % len(setup.held)]
            setup.builder.heartbeat(step, agent, lease=7 * 86400)
            setup.builder.flush()
            if mode == "followed":
                setup.model.catch_up()
        started = time.perf_counter()
        if mode == "scan":
            [s for s, v in setup.model.verdicts(PLAN) if v.kind == "claimable"]
        else:
            setup.model.ready(PLAN)
        found.append((time.perf_counter() - started) * 1000)
    expected = 50 - HELD
    assert len(setup.model.ready(PLAN)) == expected, "the plan is not in the planned state"
    return found


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def run(smoke: bool = False) -> list[Figure]:
    steps, width, big, queries, rounds = (
        (200, 50, 5_000, 40, 2) if smoke else (10_000, 50, 1_000_000, 500, 5))
    found: dict[str, list[float]] = {}
    with scratch_dir("ready") as directory:
        small = build(directory / "small.sqlite", steps, width, 0)
        large = build(directory / "large.sqlite", steps, width, big)
        for _ in range(rounds):  # alternate, so both logs see the same neighbours
            for mode in ("pull", "followed"):
                for label, setup in (("own", small), ("padded", large)):
                    found.setdefault(f"{label} {mode}", []).extend(
                        latencies(setup, queries, mode))
        found["scan"] = latencies(small, max(10, queries // 20), "scan")
        for setup in (small, large):
            setup.store.close()
    return _figures(found, steps, small.built, large, rounds)


def _figures(found: dict[str, list[float]], steps: int, own_count: int, large: Setup,
             rounds: int) -> list[Figure]:
    median = statistics.median
    own, padded = f"the plan's own log ({own_count:,} events)", f"{large.built:,}"
    return [
        Figure(f"ready median, {steps:,}-step plan (goal <= 1 ms)", median(found["own pull"]),
               "ms", "full scan with the claim rule: median", median(found["scan"]),
               rounds=rounds),
        Figure(f"ready p99, {steps:,}-step plan", p99(found["own pull"]), "ms",
               "full scan with the claim rule: p99", p99(found["scan"]), rounds=rounds),
        Figure(f"ready median, {padded}-event log", median(found["padded pull"]), "ms",
               f"ready median, {own}", median(found["own pull"]), goal=1.2,
               lower_is_better=True, rounds=rounds),
        Figure(f"ready p99, {padded}-event log", p99(found["padded pull"]), "ms",
               f"ready p99, {own}", p99(found["own pull"]), rounds=rounds),
        Figure(f"followed model (no poll): ready median, {padded}-event log",
               median(found["padded followed"]), "ms", f"the same, {own}",
               median(found["own followed"]), goal=1.2, lower_is_better=True, rounds=rounds),
        Figure(f"catch-up of the {padded}-event log", large.catch_up_rate, "events/s"),
    ]
