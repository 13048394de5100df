"""The pure claim rule and the dependency-graph checks, without any store."""

from datetime import timedelta

import pytest

from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.claims import assess, live_holder
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.plans import decide_declare_dependencies, find_cycle
from planledger.ledger.domain.state import PlanState, StepDef, StepState, fold_plan
from tests.support import OPERATOR
from tests.support.fakes import EPOCH

HOLDER = SessionId("S1")


def _held(expires_in: float) -> StepState:
    return StepState(StepId("X"), 2, PlanSlug("p"), status="in_progress", holder=HOLDER,
                     fence=1, expires_at=EPOCH + timedelta(seconds=expires_in), lease_seconds=60)


def _def(*deps: str) -> StepDef:
    return StepDef(StepId("X"), 0, "x", "", tuple(StepId(d) for d in deps), EPOCH)


def test_lease_expiring_exactly_now_no_longer_holds() -> None:
    assert live_holder(_held(0.001), EPOCH, holder_ended=False) == HOLDER
    assert live_holder(_held(0), EPOCH, holder_ended=False) is None


def test_ended_holder_no_longer_holds_even_with_time_left() -> None:
    assert live_holder(_held(600), EPOCH, holder_ended=True) is None


def test_lapsed_claim_is_claimable_naming_the_lapsed_holder() -> None:
    verdict = assess(_held(-1), _def(), lambda _: "done", holder_ended=False, now=EPOCH)
    assert (verdict.kind, verdict.holder) == ("claimable", HOLDER)


def test_unsatisfied_dependencies_block_with_their_statuses() -> None:
    status = {"A": "done", "B": "in_progress", "C": "dropped", "D": "open"}
    open_step = StepState(StepId("X"), 1, PlanSlug("p"))
    verdict = assess(open_step, _def("A", "B", "C", "D"), lambda s: status[s], False, EPOCH)
    assert (verdict.kind, verdict.blockers) == ("blocked", (("B", "in_progress"), ("D", "open")))


@pytest.mark.parametrize("status", ["done", "dropped"])
def test_closed_steps_are_closed(status: str) -> None:
    step = StepState(StepId("X"), 3, PlanSlug("p"), status=status)  # type: ignore[arg-type]
    assert assess(step, _def(), lambda _: "open", False, EPOCH).kind == "closed"


def _chain_plan(n: int) -> PlanState:
    created = ev.PlanCreated("plan:p", 1, EPOCH, None, slug="p", title="P", constraints={})
    adds = [
        ev.StepAdded("plan:p", i + 2, EPOCH, None, step_id=f"S{i}", title=f"s{i}", body="",
                     depends_on=[f"S{i - 1}"] if i else [])
        for i in range(n)
    ]
    plan = fold_plan(None, [created, *adds])
    assert plan is not None
    return plan


def test_long_chain_back_edge_is_named_as_a_cycle() -> None:
    plan = _chain_plan(10_000)
    assert find_cycle(plan, StepId("S0"), [StepId("S9999")])[:3] == ["S0", "S9999", "S9998"]
    with pytest.raises(errors.DependencyCycle):
        decide_declare_dependencies(plan, StepId("S0"), ["S9999"], OPERATOR, EPOCH)


def test_forward_edge_in_a_chain_is_no_cycle() -> None:
    plan = _chain_plan(50)
    declared = decide_declare_dependencies(plan, StepId("S49"), ["S0"], OPERATOR, EPOCH)
    assert declared.depends_on == ["S0"]
