"""The read model's reservations are disposable like the rest of it: kept incrementally
they equal a rebuild from the log, a checkpoint carries them, and a restart resumes with
them; their liveness follows the claim (lapse, close) with no event."""

import random
from pathlib import Path

from planledger.api.runtime import Runtime, open_checkpoints, open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain.paths import PathSpec
from planledger.projections import reservations
from planledger.projections.readmodel import ReadModel
from tests.support import OPERATOR
from tests.support.fakes import FakeClock, SequentialIds

POOL = ["src/**", "src/a.go", "src/b/*.go", "docs/", "docs/x.md", "**/*.md", "go.mod"]


def _workload(rt: Runtime, clock: FakeClock, seed: int, rounds: int) -> None:
    """Steps declaring random paths; agents claiming (with more paths), heartbeating,
    completing, releasing and lapsing at random, bouncing off each other's paths."""
    rng = random.Random(seed)
    steps = [NewStep(f"step {i}", paths=tuple(
        PathSpec(p, rng.choice(["exclusive", "shared"])) for p in rng.sample(POOL, 2)))
        for i in range(12)]
    _, ids = rt.ledger.create_plan(f"p-{seed}", "P", steps=steps, actor=OPERATOR)
    agents = [rt.ledger.start_session(f"agent {i}").id for i in range(3)]
    for _ in range(rounds):
        step, agent = rng.choice(ids), rng.choice(agents)
        action = rng.choice(["claim", "claim", "complete", "release", "tick"])
        try:
            if action == "claim":
                rt.ledger.claim(step, agent, lease_seconds=30,
                                paths=[PathSpec(rng.choice(POOL))] if rng.random() < .3 else [])
            elif action == "complete":
                rt.ledger.complete(step, agent)
            elif action == "release":
                rt.ledger.release(step, agent)
            else:
                clock.advance(rng.choice([5, 20, 40]))
        except (errors.PathsHeld, errors.AlreadyClaimed, errors.NotHolder, errors.Closed):
            pass


def test_reservations_kept_incrementally_equal_a_rebuild_and_survive_a_restart(
    tmp_path: Path,
) -> None:
    db, clock = str(tmp_path / "ledger.sqlite"), FakeClock()
    rt = open_runtime(db, clock=clock, ids=SequentialIds())
    first = ReadModel(rt.store, clock, checkpoints=open_checkpoints(db))
    _workload(rt, clock, seed=1, rounds=300)
    first.catch_up()
    assert first.view.reservations, "the workload reserved paths"
    assert first.checkpoint()
    _workload(rt, clock, seed=2, rounds=300)
    rt.close()

    rt = open_runtime(db, clock=clock, ids=SequentialIds())
    restarted = ReadModel(rt.store, clock, checkpoints=open_checkpoints(db), pull_on_read=False)
    assert restarted.resumed_from > 0
    restarted.catch_up()
    rebuilt = ReadModel(rt.store, clock, pull_on_read=False)
    rebuilt.catch_up()
    assert restarted.facts() == rebuilt.facts()
    rt.close()


def test_a_reservation_is_live_exactly_while_its_claim_is(runtime: Runtime,
                                                          clock: FakeClock) -> None:
    ledger = runtime.ledger
    a = ledger.start_session("agent A").id
    _, (step,) = ledger.create_plan("p", "P", steps=[
        NewStep("s", paths=(PathSpec("src/**"),))], actor=OPERATOR)

    def live() -> list[str]:
        with runtime.reads.reading() as (view, moment):
            return [h.step_id for h in reservations.live(view, moment)]

    ledger.claim(step, a, lease_seconds=10)
    assert live() == [step]
    clock.advance(9)
    ledger.heartbeat(step, a, lease_seconds=10)  # renews the reservation with the lease
    clock.advance(9)
    assert live() == [step]
    clock.advance(2)
    assert live() == []  # lapsed: freed, with no event
    ledger.claim(step, a, lease_seconds=10)
    ledger.release(step, a)
    assert live() == []
