"""Claim order: what handing out the longest chain first costs claim-next on 10,000 steps.

Claim-next tries a plan's ready steps by priority, then the step heading the longest chain
of open steps still waiting on it (its level), then the oldest; a ready list shows them by
priority, then age. Levels are kept per plan and worked out again only after the plan's
structure changes (a step added, a dependency declared, a step opened or closed while
something it waits on is open). Three plans of 10,000 steps on the SQLite store:
- layered: 200 layers of 50, each step waiting on 2 of the layer before, the first 100
  layers done (50 ready, 100 deep);
- wide: 10,000 steps waiting on nothing (10,000 ready, all of level 1);
- chain: one step alone and a chain of 9,999 (2 ready; the chain's head of level 9,999).

Figures (same run, same process, the same read model pulling the log first as the ledger
calls it): the median milliseconds of the candidate list in claim order, with levels kept
and with levels dropped before every call (the next claim-next after a structural change
walks every open step below the ready ones), against the ready list's order (the order
claim-next tried before); and one claim-next + release cycle through the `Ledger` on the
layered plan, in claim order against the same ledger handed the ready list's order.
"""

import statistics
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

from planledger.bench.ledger_log import LogBuilder, StillClock, layered_graph
from planledger.bench.timing import Figure, scratch_dir
from planledger.infra.clock_ids import UlidGenerator
from planledger.infra.persistence import open_event_store
from planledger.ledger.application import Ledger
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.ports import CandidateView
from planledger.ledger.store import EventStore
from planledger.projections.readmodel import ReadModel

PLAN = PlanSlug("p")


class ReadyOrder(CandidateView):
    """The read model, handing claim-next the ready list's order (the order before)."""

    def __init__(self, model: ReadModel) -> None:
        self.model = model

    def held_by(self, session: SessionId) -> Sequence[StepId]:
        return self.model.held_by(session)

    def ready(self, plan: PlanSlug) -> Sequence[StepId]:
        return self.model.ready(plan)

    def claim_order(self, plan: PlanSlug) -> Sequence[StepId]:
        return self.model.ready(plan)

    def plans_with_key(self, key: str) -> Sequence[PlanSlug]:
        return self.model.plans_with_key(key)


def _graph(shape: str, steps: int) -> tuple[list[list[int]], int]:
    """The plan's dependencies, and how many of its first steps are done."""
    if shape == "layered":
        return layered_graph(steps, 50, fan_in=2), steps // 2
    if shape == "wide":
        return [[] for _ in range(steps)], 0
    return [[]] + [[]] + [[i - 1] for i in range(2, steps)], 0


def build(db: Path, shape: str, steps: int) -> tuple[EventStore, ReadModel, StillClock]:
    store = open_event_store(str(db))
    builder = LogBuilder(store)
    graph, done = _graph(shape, steps)
    ids = builder.plan(PLAN, graph)
    agent = builder.session("agent")
    for step in ids[:done]:
        builder.claim(step, agent)
        builder.complete(step, agent)
    builder.flush()
    clock = StillClock(builder.now + timedelta(seconds=5))
    model = ReadModel(store, clock)
    model.catch_up()
    return store, model, clock


def _median_ms(call: Callable[[], object], times: int,
               before: Callable[[], None] = lambda: None) -> float:
    found = []
    for _ in range(times):
        before()
        started = time.perf_counter()
        call()
        found.append((time.perf_counter() - started) * 1000)
    return statistics.median(found)


def _forget_levels(model: ReadModel) -> Callable[[], None]:
    def forget() -> None:
        with model.reading() as (view, _):
            view._levels.clear()  # what a structural change leaves the next claim-next
    return forget


def _cycles(store: EventStore, clock: StillClock, view: CandidateView, times: int) -> float:
    """Median ms of one claim-next and the release that puts the plan back as it was."""
    ledger = Ledger(store, clock, UlidGenerator(), view)
    session = ledger.start_session("bench").id

    def cycle() -> None:
        grant = ledger.claim_next(PLAN, session)
        assert grant is not None
        ledger.release(grant.step_id, session, grant.fence)

    return _median_ms(cycle, times)


def run(smoke: bool = False) -> list[Figure]:
    steps, queries, cycles = (300, 20, 10) if smoke else (10_000, 200, 200)
    figures: list[Figure] = []
    with scratch_dir("claim-order") as directory:
        for shape in ("layered", "wide", "chain"):
            store, model, clock = build(directory / f"{shape}.sqlite", shape, steps)
            try:
                times = queries if shape == "layered" else max(5, queries // 10)
                figures += _orders(model, f"{shape} {steps:,}-step plan", times)
                if shape == "layered":
                    old = _cycles(store, clock, ReadyOrder(model), cycles)
                    new = _cycles(store, clock, model, cycles)
                    figures.append(Figure(
                        f"claim-next + release, layered {steps:,}-step plan: median", new,
                        "ms", "the same in the ready list's order: median", old,
                        lower_is_better=True, rounds=cycles))
            finally:
                store.close()
    return figures


def _orders(model: ReadModel, plan: str, times: int) -> list[Figure]:
    """The candidate list in claim order, levels kept and worked out afresh, against the
    ready list's order."""
    before = _median_ms(lambda: model.ready(PLAN), times)
    kept = _median_ms(lambda: model.claim_order(PLAN), times)
    cold = _median_ms(lambda: model.claim_order(PLAN), times, _forget_levels(model))
    baseline = "ready order (claim-next's before): median"
    return [Figure(f"claim order, {plan}, levels kept: median", kept, "ms", baseline,
                   before, lower_is_better=True, rounds=times),
            Figure(f"claim order, {plan}, levels worked out afresh: median", cold, "ms",
                   baseline, before, lower_is_better=True, rounds=times)]
