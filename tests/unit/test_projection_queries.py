"""What the read models answer: ready (lapses, order), blocked, holders, progress, history,
and the same questions as of a past time or log position."""

import itertools
from datetime import timedelta

import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.application import Ledger, NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.ledger.ports import IdGenerator
from planledger.projections.readmodel import ReadModel
from tests.support import OPERATOR
from tests.support.fakes import EPOCH, FakeClock, SequentialIds

PLAN = PlanSlug("p")


def chain(rt: Runtime) -> list[StepId]:
    """a; b waits on a; c; d waits on a and c."""
    _, steps = rt.ledger.create_plan(PLAN, "Plan", steps=[
        NewStep("a", key="a"), NewStep("b", key="b", depends_on=["a"]), NewStep("c", key="c"),
        NewStep("d", key="d", depends_on=["a", "c"])], actor=OPERATOR)
    return steps


def test_a_lapsed_lease_is_claimable_at_once_naming_the_lapsed_holder(
    rt: Runtime, clock: FakeClock
) -> None:
    a, *_ = chain(rt)
    agent = rt.ledger.start_session("agent B")
    rt.ledger.claim(a, agent.id, lease_seconds=60)
    assert a not in rt.reads.ready(PLAN)
    clock.advance(60)  # a lease at its expiry no longer holds
    first = rt.reads.ready_steps(PLAN)[0]
    assert (first.step_id, first.lapsed_holder, first.lapsed_holder_name) == (
        a, agent.id, "agent B")
    assert rt.reads.holders() == [] and rt.reads.holder(a) is None
    other = rt.ledger.start_session("agent A")
    assert rt.ledger.claim(a, other.id).fence == 2


def test_a_claim_whose_session_ended_is_claimable_naming_the_ended_holder(
    rt: Runtime, clock: FakeClock
) -> None:
    a, *_ = chain(rt)
    agent = rt.ledger.start_session("gone")
    rt.ledger.claim(a, agent.id)
    # A ledger whose view has not seen the claim ends the session without releasing it.
    stale = ReadModel(rt.store, clock, pull_on_read=False)
    Ledger(rt.store, clock, SequentialIds(), stale).end_session(agent.id)
    rt.reads.catch_up()
    assert rt.reads.steps[a].status == "in_progress"
    ready = rt.reads.ready_steps(PLAN)
    assert (ready[0].step_id, ready[0].lapsed_holder) == (a, agent.id)


def test_blocked_steps_name_each_blocker_with_its_status(rt: Runtime) -> None:
    a, b, c, d = chain(rt)
    agent = rt.ledger.start_session("x")
    rt.ledger.claim(c, agent.id)
    blocked = {s.step_id: [(x.step_id, x.title, x.status) for x in s.blockers]
               for s in rt.reads.blocked(PLAN)}
    assert blocked == {b: [(a, "a", "open")], d: [(a, "a", "open"), (c, "c", "in_progress")]}
    rt.ledger.complete(c, agent.id)
    rt.ledger.claim(a, agent.id)
    rt.ledger.complete(a, agent.id)
    assert rt.reads.blocked(PLAN) == []
    assert rt.reads.ready(PLAN) == [b, d]


class CountingDown(IdGenerator):
    """Ids that sort in the opposite order to their creation."""

    def __init__(self) -> None:
        self.numbers = itertools.count(999)

    def new_id(self) -> str:
        return f"S{1000 - next(self.numbers):04d}"


def test_ready_is_oldest_first_and_ties_are_broken_by_id(clock: FakeClock) -> None:
    rt = open_runtime("memory", clock=clock, ids=CountingDown())
    _, (first, second) = rt.ledger.create_plan(PLAN, "Plan", steps=[NewStep("1"), NewStep("2")],
        actor=OPERATOR)
    clock.advance(1)
    third = rt.ledger.add_step(PLAN, "3", actor=OPERATOR)
    assert first > second > third  # ids run backwards
    assert rt.reads.ready(PLAN) == [second, first, third]  # same moment: by id; then age
    other = rt.ledger.create_plan("q", "Q", steps=[NewStep("q1")], actor=OPERATOR)[1][0]
    assert [r.step_id for r in rt.reads.ready_steps()] == [second, first, third, other]


def test_holders_show_session_name_expiry_fence_and_time_left(
    rt: Runtime, clock: FakeClock
) -> None:
    a, _, c, _ = chain(rt)
    agent_b = rt.ledger.start_session("agent B")
    agent_a = rt.ledger.start_session("agent A")
    rt.ledger.claim(a, agent_b.id, lease_seconds=600)
    rt.ledger.claim(c, agent_a.id, lease_seconds=300)
    clock.advance(100)
    holders = [(h.step_id, h.session_name, h.fence, h.expires_at, h.seconds_left)
               for h in rt.reads.holders()]
    assert holders == [(c, "agent A", 1, EPOCH + timedelta(seconds=300), 200.0),
                       (a, "agent B", 1, EPOCH + timedelta(seconds=600), 500.0)]
    assert [h.step_id for h in rt.reads.holdings_of(agent_b.id)] == [a]
    assert rt.reads.held_by(agent_b.id) == [a]


def test_progress_rolls_up_in_one_line(rt: Runtime, clock: FakeClock) -> None:
    a, b, c, _ = chain(rt)
    agent = rt.ledger.start_session("x")
    rt.ledger.claim(a, agent.id)
    rt.ledger.complete(a, agent.id)
    rt.ledger.drop(b, OPERATOR)
    rt.ledger.claim(c, agent.id, lease_seconds=10)
    progress = rt.reads.progress(PLAN)
    assert progress.rollup == "p: 1/4 done, 0 claimable, 1 in flight"
    assert (progress.total, progress.dropped, progress.blocked) == (4, 1, 1)
    clock.advance(10)
    assert rt.reads.progress(PLAN).rollup == "p: 1/4 done, 1 claimable, 0 in flight"
    assert [p.plan for p in rt.reads.progress_all()] == [PLAN]


def test_leases_lapse_in_expiry_order_and_a_heartbeat_moves_a_lease_back(
    rt: Runtime, clock: FakeClock
) -> None:
    _, steps = rt.ledger.create_plan(PLAN, "Plan", steps=[NewStep(f"s{i}") for i in range(4)],
                                     actor=OPERATOR)
    agent = rt.ledger.start_session("x")
    for i, step in enumerate(steps):  # s0 lapses last, s3 first
        rt.ledger.claim(step, agent.id, lease_seconds=40 - 10 * i)
    clock.advance(5)
    rt.ledger.heartbeat(steps[3], agent.id, lease_seconds=30)  # 10 s -> 35 s from the start
    clock.advance(15)  # 20 s: the 20 s lease of s2 has lapsed, the renewed s3 holds
    assert rt.reads.ready(PLAN) == [steps[2]]
    assert rt.reads.progress(PLAN).rollup == "p: 0/4 done, 1 claimable, 3 in flight"
    clock.advance(10)  # 30 s: s1 too
    assert rt.reads.ready(PLAN) == [steps[1], steps[2]]
    clock.advance(5)  # 35 s: the renewed s3 too
    assert rt.reads.ready(PLAN) == steps[1:]
    assert [h.step_id for h in rt.reads.holders()] == [steps[0]]


def test_history_is_every_event_of_the_step_in_log_order(rt: Runtime, clock: FakeClock) -> None:
    a, b, *_ = chain(rt)
    one, two = rt.ledger.start_session("one"), rt.ledger.start_session("two")
    with pytest.raises(errors.Blocked):
        rt.ledger.claim(b, one.id)
    rt.ledger.revise_step(b, title="b, revised", actor=OPERATOR)
    rt.ledger.claim(a, one.id)
    rt.ledger.complete(a, one.id)
    rt.ledger.claim(b, one.id)
    rt.ledger.heartbeat(b, one.id)
    with pytest.raises(errors.AlreadyClaimed):
        rt.ledger.claim(b, two.id)
    rt.ledger.complete(b, one.id)
    history = rt.reads.history(b)
    assert [e.kind for e in history] == [
        "StepAdded", "StepOpened", "ClaimRefused", "StepRevised", "StepClaimed",
        "LeaseRenewed", "ClaimBounced", "StepCompleted"]
    positions = [e.position for e in history]
    assert positions == sorted(positions)
    assert [e.kind for e in rt.reads.history(b, upto=positions[3])][-1] == "StepRevised"
    with pytest.raises(errors.UnknownStep):
        rt.reads.history(StepId("nope"))


def test_as_of_a_time_says_who_held_the_step_then(rt: Runtime, clock: FakeClock) -> None:
    a, *_ = chain(rt)
    agent_b, agent_a = rt.ledger.start_session("B"), rt.ledger.start_session("A")
    rt.ledger.claim(a, agent_b.id, lease_seconds=120)  # 10:00:00, lapses at 10:02:00
    clock.set(EPOCH.replace(minute=2, second=13))
    rt.ledger.claim(a, agent_a.id)  # 10:02:13
    assert rt.reads.as_of(time=EPOCH.replace(minute=1)).holder(a) == agent_b.id
    between = rt.reads.as_of(time=EPOCH.replace(minute=2, second=5))
    assert between.holder(a) is None
    assert between.ready_steps(PLAN)[0].lapsed_holder == agent_b.id
    assert rt.reads.as_of(time=EPOCH.replace(minute=2, second=13)).holder(a) == agent_a.id


def test_as_of_a_log_position_is_the_state_after_that_event(rt: Runtime) -> None:
    a, *_ = chain(rt)
    agent = rt.ledger.start_session("x")
    before_claim = rt.store.last_position()
    rt.ledger.claim(a, agent.id)
    then = rt.reads.as_of(position=before_claim)
    assert then.position == before_claim
    assert a in then.ready_ids(PLAN) and a not in rt.reads.ready(PLAN)
    assert [e.kind for e in then.history(a)] == ["StepAdded", "StepOpened"]


def test_verdicts_cover_every_open_or_in_progress_step(rt: Runtime) -> None:
    a, b, c, d = chain(rt)
    agent = rt.ledger.start_session("x")
    rt.ledger.claim(c, agent.id)
    rt.ledger.drop(d, OPERATOR)
    kinds = [(s, v.kind) for s, v in rt.reads.verdicts(PLAN)]
    assert kinds == [(a, "claimable"), (b, "blocked"), (c, "held")]


def test_unknown_plans_and_steps_are_refused_by_name(rt: Runtime) -> None:
    with pytest.raises(errors.UnknownPlan, match='plan not found: "nope"'):
        rt.reads.ready(PlanSlug("nope"))
    with pytest.raises(errors.UnknownStep):
        rt.reads.holder(StepId("nope"))
