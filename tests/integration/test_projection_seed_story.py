"""The seed's story, read from the read models: two agents, one step, no collision."""

import pytest

from planledger.api.runtime import Runtime
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PlanSlug
from tests.support.fakes import FakeClock
from tests.support.seed import AUTH_REFRESH_STEPS, seed_auth_refresh

PLAN = PlanSlug("auth-refresh")


def test_after_b_claims_and_a_bounces_ready_shows_only_step_6(
    runtime: Runtime, clock: FakeClock
) -> None:
    steps = seed_auth_refresh(runtime.ledger)
    reads = runtime.reads
    assert reads.progress(PLAN).rollup == "auth-refresh: 4/6 done, 2 claimable, 0 in flight"
    agent_b = runtime.ledger.start_session("agent B")
    agent_a = runtime.ledger.start_session("agent A")
    # Both list ready at the same moment and see the same two steps.
    assert [r.title for r in reads.ready_steps(PLAN)] == AUTH_REFRESH_STEPS[4:6]

    clock.advance(2)
    runtime.ledger.claim(steps[4], agent_b.id)
    with pytest.raises(errors.AlreadyClaimed, match=f'held by "{agent_b.id}"'):
        runtime.ledger.claim(steps[4], agent_a.id)

    assert [r.step_id for r in reads.ready_steps(PLAN)] == [steps[5]]
    assert reads.ready(PLAN) == [steps[5]]
    assert reads.progress(PLAN).rollup == "auth-refresh: 4/6 done, 1 claimable, 1 in flight"
    [held] = reads.holders(PLAN)
    assert (held.step_id, held.session_id, held.session_name, held.fence) == (
        steps[4], agent_b.id, "agent B", 1)

    # The step's history: B's claim, then A's bounce naming B.
    story = [e for e in reads.history(steps[4]) if e.session_id in (agent_a.id, agent_b.id)]
    assert [(e.kind, e.session_id) for e in story] == [
        ("StepClaimed", agent_b.id), ("ClaimBounced", agent_a.id)]
    bounce = story[1].event
    assert isinstance(bounce, ev.ClaimBounced) and bounce.holder == agent_b.id
    assert story[0].position < story[1].position

    # A pivots to step 6; both finish; the plan is done.
    runtime.ledger.claim(steps[5], agent_a.id)
    assert reads.ready(PLAN) == []
    runtime.ledger.complete(steps[4], agent_b.id)
    runtime.ledger.complete(steps[5], agent_a.id)
    assert reads.progress(PLAN).rollup == "auth-refresh: 6/6 done, 0 claimable, 0 in flight"
