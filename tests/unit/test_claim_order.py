"""The order claim-next hands steps out in: by priority, then the step heading the longest
chain of open steps still waiting on it, then the oldest; the ready list keeps showing
priority, then age. Through a real read model, as its levels follow the plan's changes."""

import random

from planledger.api.runtime import Runtime
from planledger.ledger import commands as c
from planledger.ledger.application import NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.projections.readmodel import ReadModel
from tests.support import OPERATOR
from tests.support.fakes import FakeClock

PLAN = PlanSlug("p")


def _plan(rt: Runtime, *steps: NewStep) -> list[StepId]:
    # The command itself: Ledger.create_plan passes no step's priority on.
    made = rt.ledger.execute(c.CreatePlan(PLAN, "Plan", OPERATOR, steps=tuple(steps)))
    return list(made.step_ids)


def _next(rt: Runtime) -> StepId | None:
    session = rt.ledger.start_session("agent")
    grant = rt.ledger.claim_next(PLAN, session.id)
    return grant.step_id if grant is not None else None


def test_claim_next_takes_the_head_of_the_longest_chain_and_ready_still_lists_by_age(
    rt: Runtime,
) -> None:
    lone, head, _, _ = _plan(rt, NewStep("lone"), NewStep("head", key="h"),
                             NewStep("middle", key="m", depends_on=["h"]),
                             NewStep("tail", depends_on=["m"]))
    assert rt.reads.ready(PLAN) == [lone, head]
    assert _next(rt) == head
    assert rt.reads.ready(PLAN) == [lone]  # the listing's order is not claim-next's


def test_priority_still_comes_before_the_chain(rt: Runtime) -> None:
    urgent, _, _ = _plan(rt, NewStep("urgent", priority=1), NewStep("head", key="h"),
                         NewStep("tail", depends_on=["h"]))
    assert _next(rt) == urgent


def test_chains_of_equal_length_go_oldest_first(rt: Runtime, clock: FakeClock) -> None:
    first, _ = _plan(rt, NewStep("first", key="f"), NewStep("after first", depends_on=["f"]))
    clock.advance(1)
    second = rt.ledger.add_step(PLAN, "second", actor=OPERATOR)
    rt.ledger.add_step(PLAN, "after second", depends_on=[second], actor=OPERATOR)
    assert rt.reads.claim_order(PLAN) == [first, second]
    assert (_next(rt), _next(rt)) == (first, second)


def test_the_order_follows_steps_added_dropped_reopened_and_dependencies_declared(
    rt: Runtime,
) -> None:
    x, y = _plan(rt, NewStep("x"), NewStep("y"))
    assert rt.reads.claim_order(PLAN) == [x, y]  # levels worked out, and kept
    z = rt.ledger.add_step(PLAN, "z", depends_on=[y], actor=OPERATOR)
    assert rt.reads.claim_order(PLAN) == [y, x]
    rt.ledger.drop(z, OPERATOR)  # nothing waits on y any more
    assert rt.reads.claim_order(PLAN) == [x, y]
    rt.ledger.reopen(z, OPERATOR)
    assert rt.reads.claim_order(PLAN) == [y, x]
    w = rt.ledger.add_step(PLAN, "w", actor=OPERATOR)
    v = rt.ledger.add_step(PLAN, "v", actor=OPERATOR)
    rt.ledger.declare_dependencies(v, [w], actor=OPERATOR)
    rt.ledger.declare_dependencies(w, [x], actor=OPERATOR)  # x heads x, w, v: 3 long
    assert rt.reads.claim_order(PLAN) == [x, y]


def test_a_completed_step_shortens_no_open_chain_and_its_dependents_take_its_place(
    rt: Runtime,
) -> None:
    lone, head, middle, _ = _plan(rt, NewStep("lone"), NewStep("head", key="h"),
                                  NewStep("middle", key="m", depends_on=["h"]),
                                  NewStep("tail", depends_on=["m"]))
    agent = rt.ledger.start_session("agent")
    grant = rt.ledger.claim_next(PLAN, agent.id)
    assert grant is not None and grant.step_id == head
    rt.ledger.complete(head, agent.id, grant.fence)
    assert rt.reads.claim_order(PLAN) == [middle, lone]


def test_a_chain_deeper_than_the_interpreters_stack_is_measured(rt: Runtime) -> None:
    depth = 1_500  # sys.getrecursionlimit() is 1,000
    steps = [NewStep("lone"), NewStep("0", key="0")]
    steps += [NewStep(str(i), key=str(i), depends_on=[str(i - 1)]) for i in range(1, depth)]
    lone, head, *_ = _plan(rt, *steps)
    assert rt.reads.claim_order(PLAN) == [head, lone]


def test_a_step_added_at_the_foot_of_a_chain_lengthens_it_up_to_its_head(rt: Runtime) -> None:
    a, b, x, _, _ = _plan(rt, NewStep("a", key="a"), NewStep("b", key="b", depends_on=["a"]),
                          NewStep("x", key="x"), NewStep("x2", key="x2", depends_on=["x"]),
                          NewStep("x3", depends_on=["x2"]))
    assert rt.reads.claim_order(PLAN) == [x, a]  # 3 long against 2
    rt.ledger.add_step(PLAN, "c", depends_on=[b], actor=OPERATOR)
    assert rt.reads.claim_order(PLAN) == [a, x]  # 3 long each: the older first


def test_a_step_reopened_under_a_chain_lengthens_it_up_to_its_head(rt: Runtime) -> None:
    a, _, c, x, _, _ = _plan(rt, NewStep("a", key="a"), NewStep("b", key="b", depends_on=["a"]),
                             NewStep("c", depends_on=["b"]), NewStep("x", key="x"),
                             NewStep("x2", key="x2", depends_on=["x"]),
                             NewStep("x3", depends_on=["x2"]))
    assert rt.reads.claim_order(PLAN) == [a, x]  # 3 long each: the older first
    rt.ledger.drop(c, OPERATOR)
    assert rt.reads.claim_order(PLAN) == [x, a]  # 3 long against 2
    rt.ledger.reopen(c, OPERATOR)
    assert rt.reads.claim_order(PLAN) == [a, x]

def test_levels_kept_through_changes_order_as_levels_worked_out_afresh(
    rt: Runtime, clock: FakeClock,
) -> None:
    """Steps added, dependencies declared, claims completed, steps dropped and reopened,
    at random: after each, the live model's order is a fresh fold's of the same log."""
    rng = random.Random(19)
    steps = _plan(rt, *(NewStep(str(i)) for i in range(8)))
    agent = rt.ledger.start_session("agent").id
    for turn in range(300):
        clock.advance(1)
        action = rng.choice(["add", "declare", "work", "work", "drop", "reopen"])
        some = rng.sample(steps, k=min(2, len(steps)))
        try:
            if action == "add":
                steps.append(rt.ledger.add_step(PLAN, str(turn), depends_on=some,
                                                actor=OPERATOR))
            elif action == "declare":
                rt.ledger.declare_dependencies(some[0], some[1:], actor=OPERATOR)
            elif action == "work" and (grant := rt.ledger.claim_next(PLAN, agent)):
                rt.ledger.complete(grant.step_id, agent, grant.fence)
            elif action == "drop":
                rt.ledger.drop(some[0], OPERATOR)
            elif action == "reopen":
                rt.ledger.reopen(some[0], OPERATOR)
        except (errors.DependencyCycle, errors.Closed, errors.NotReopenable):
            pass
        fresh = ReadModel(rt.store, clock)
        assert rt.reads.claim_order(PLAN) == fresh.claim_order(PLAN), (turn, action)
