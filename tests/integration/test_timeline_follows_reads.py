"""A server's timeline follows its read model (one fold of the log) and reads exactly as
a timeline that folds the log by itself: whatever the read model had applied when the
timeline joined it, and for everything appended after."""

from pathlib import Path

import pytest

from planledger.api.runtime import Runtime
from planledger.ledger.application import NewStep
from planledger.projections.plan_timelines import PlanTimelines
from planledger.projections.readmodel import ReadModel
from planledger.projections.timeline import Timeline, TimelineModel
from tests.integration.test_projection_rebuild import random_workload, restarted
from tests.support import OPERATOR
from tests.support.fakes import FakeClock


def _all(model: TimelineModel, plans: list[str]) -> list[Timeline]:
    return [model.timeline(), *(model.timeline(plan=p) for p in plans)]


def _assert_same_as_own_fold(rt: Runtime, follower: TimelineModel) -> None:
    plans = list(rt.reads.plan_slugs())
    assert _all(follower, plans) == _all(TimelineModel(rt.store), plans)


@pytest.mark.parametrize("read_model_at", ["caught up", "behind", "empty"])
def test_a_timeline_joining_a_read_model_reads_as_its_own_fold(
    runtime: Runtime, clock: FakeClock, read_model_at: str
) -> None:
    random_workload(runtime, clock, seed=31, commands=120)
    reads = ReadModel(runtime.store, clock, pull_on_read=False)
    if read_model_at == "caught up":
        reads.catch_up()
    elif read_model_at == "behind":
        reads.apply_notifications(runtime.store.recorder.select_notifications(start=1, limit=50))
    follower = TimelineModel(runtime.store, reads=reads)
    _assert_same_as_own_fold(runtime, follower)
    random_workload(runtime, clock, seed=32, commands=120)  # told by the read model now
    _assert_same_as_own_fold(runtime, follower)
    assert reads.position == follower.position


def test_pages_of_a_server_plan_timeline_read_as_the_pages_of_its_own_fold(
    runtime: Runtime, clock: FakeClock
) -> None:
    random_workload(runtime, clock, seed=35, commands=160)
    follower, own = TimelineModel(runtime.store, reads=runtime.reads), TimelineModel(runtime.store)
    for plan in runtime.reads.plan_slugs():
        whole = own.timeline(plan=plan).entries
        positions = [0, *(e.position for e in whole[::5])]
        for after in positions:
            for limit in (1, 4, None):
                assert follower.timeline(plan=plan, after=after, limit=limit) == own.timeline(
                    plan=plan, after=after, limit=limit), (plan, after, limit)
        agents = tuple(sorted({e.session_id for e in whole if e.session_id})[:1])
        assert follower.timeline(plan=plan, sessions=agents) == own.timeline(
            plan=plan, sessions=agents)


def test_a_plan_timeline_dropped_from_the_kept_ones_reads_right_when_asked_again(
    runtime: Runtime, clock: FakeClock
) -> None:
    random_workload(runtime, clock, seed=36, commands=80)
    first, second, *_ = runtime.reads.plan_slugs()
    kept = PlanTimelines(runtime.store, runtime.reads, TimelineModel, kept=1)

    def read(plan: str) -> Timeline:
        return kept.timeline(plan, (), None, None, 0, None)

    read(first)
    read(second)  # the first one's model goes, and stops listening
    late = runtime.ledger.start_session("late").id
    step = runtime.ledger.add_step(first, "late step", actor=late)
    runtime.ledger.claim(step, late)
    runtime.ledger.complete(step, late)
    for plan in (first, second):
        assert read(plan) == TimelineModel(runtime.store).timeline(plan=plan)


def test_a_server_timeline_after_a_restart_from_a_checkpoint(
    tmp_path: Path, clock: FakeClock
) -> None:
    rt, saved_at = restarted(str(tmp_path / "ledger.sqlite"), clock, seed=33, commands=150)
    assert rt.reads.resumed_from == saved_at  # the read model did not fold what came before
    follower = TimelineModel(rt.store, reads=rt.reads)
    _assert_same_as_own_fold(rt, follower)
    random_workload(rt, clock, seed=34, commands=100)
    _assert_same_as_own_fold(rt, follower)
    rt.close()


def test_entries_name_a_step_by_its_title_at_the_time(runtime: Runtime) -> None:
    _, (step,) = runtime.ledger.create_plan("p", "P", steps=[NewStep("first title")],
        actor=OPERATOR)
    agent = runtime.ledger.start_session("agent").id
    follower = TimelineModel(runtime.store, reads=runtime.reads)
    runtime.ledger.claim(step, agent)
    follower.timeline()  # joined: what follows, it is told
    runtime.ledger.revise_step(step, title="second title", actor=OPERATOR)
    runtime.ledger.complete(step, agent)
    for model in (follower, TimelineModel(runtime.store)):
        titles = {e.kind: e.step_title for e in model.timeline(plan="p").entries}
        assert titles["claimed"] == "first title"
        assert titles["completed"] == "second title"
