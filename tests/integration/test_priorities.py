"""Priorities: ready lists and claim-next take higher priorities (0 first) before older
steps, a revision moves a step in line at once, and the read model rebuilt from the log
keeps the same order; recordings re-execute priorities byte for byte."""

from pathlib import Path

import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.replays.format import write_file
from planledger.replays.reading import read_file
from planledger.replays.recording import export
from planledger.replays.rerun import rerun
from tests.support import OPERATOR
from tests.support.fakes import FakeClock, SequentialIds


def _plan(runtime: Runtime, clock: FakeClock) -> list[str]:
    """Five steps added a second apart: default, 4, 0, default, 0."""
    runtime.ledger.execute(c.CreatePlan("p", "P", OPERATOR))
    made = []
    for title, priority in (("a", None), ("b", 4), ("c", 0), ("d", None), ("e", 0)):
        clock.advance(1)
        made.append(runtime.ledger.execute(
            c.AddStep("p", title, OPERATOR, priority=priority)).step.id)
    return made


def test_ready_orders_by_priority_then_age(runtime: Runtime, clock: FakeClock) -> None:
    a, b, cc, d, e = _plan(runtime, clock)
    assert list(runtime.reads.ready("p")) == [cc, e, a, d, b]


def test_claim_next_takes_the_highest_priority_first(runtime: Runtime, clock: FakeClock,
                                                     ) -> None:
    a, b, cc, d, e = _plan(runtime, clock)
    agent = runtime.ledger.start_session("agent").id
    taken = [runtime.ledger.claim_next("p", agent) for _ in range(5)]
    assert [g.step_id for g in taken if g] == [cc, e, a, d, b]


def test_a_revised_priority_moves_the_step_in_line(runtime: Runtime, clock: FakeClock) -> None:
    a, b, cc, d, e = _plan(runtime, clock)
    revised = runtime.ledger.execute(c.ReviseStep(b, OPERATOR, priority=0))
    assert revised.step.priority == 0
    assert list(runtime.reads.ready("p")) == [b, cc, e, a, d]
    runtime.ledger.execute(c.ReviseStep(cc, OPERATOR, priority=3))
    assert list(runtime.reads.ready("p")) == [b, e, a, d, cc]


@pytest.mark.parametrize("priority", [-1, 5, True])
def test_a_priority_outside_0_to_4_is_refused_naming_it(runtime: Runtime, priority: int) -> None:
    runtime.ledger.execute(c.CreatePlan("p", "P", OPERATOR))
    with pytest.raises(errors.InvalidInput, match="priority"):
        runtime.ledger.execute(c.AddStep("p", "t", OPERATOR, priority=priority))


def test_a_rebuilt_read_model_and_a_rerun_keep_the_order(tmp_path: Path,
                                                         clock: FakeClock) -> None:
    db = str(tmp_path / "ledger.sqlite")
    first = open_runtime(db, clock=clock, ids=SequentialIds())
    steps = _plan(first, clock)
    first.ledger.execute(c.ReviseStep(steps[1], OPERATOR, priority=1))
    shown = list(first.reads.ready("p"))
    path = tmp_path / "priorities.jsonl"
    write_file(export(first.store), path)
    first.close()

    again = open_runtime(db, clock=clock)  # a new process: folds the log afresh
    try:
        assert list(again.reads.ready("p")) == shown
    finally:
        again.close()
    report = rerun(read_file(path))
    assert report.identical, report.describe()


def test_a_plan_made_with_its_steps_keeps_their_priorities(runtime: Runtime) -> None:
    _, (low, high) = runtime.ledger.create_plan(
        "q", "Q", steps=[c.NewStep("low", priority=4), c.NewStep("high", priority=0)],
        actor=OPERATOR)
    assert list(runtime.reads.ready("q")) == [high, low]
