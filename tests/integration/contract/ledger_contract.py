"""The ledger's contract, one abstract test case run against every backend.

Subclasses provide `make_runtime(clock)`; everything else is shared, so the in-memory,
SQLite and PostgreSQL stores are held to exactly the same behaviour.
"""

from abc import ABC, abstractmethod
from collections.abc import Iterator

import pytest

from planledger.api.runtime import Runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import StepId
from tests.support import OPERATOR
from tests.support.fakes import FakeClock
from tests.support.seed import seed_auth_refresh


class LedgerContract(ABC):
    @abstractmethod
    def make_runtime(self, clock: FakeClock) -> Runtime: ...

    @pytest.fixture
    def clock(self) -> FakeClock:
        return FakeClock()

    @pytest.fixture
    def rt(self, clock: FakeClock) -> Iterator[Runtime]:
        runtime = self.make_runtime(clock)
        yield runtime
        runtime.close()

    def two_steps(self, rt: Runtime) -> tuple[StepId, StepId]:
        _, (a, b) = rt.ledger.create_plan(
            "p", "Plan", steps=[_step("first", "a"), _step("second", "b", ["a"])],
            actor=OPERATOR)
        return a, b

    def log(self, rt: Runtime) -> list[ev.LedgerEvent]:
        notes = rt.store.recorder.select_notifications(start=1, limit=100_000)
        return [rt.store.mapper.to_domain_event(n) for n in notes]  # type: ignore[misc]

    # --- plans --------------------------------------------------------------------

    def test_a_new_plan_is_answered_as_the_store_holds_it(self, rt: Runtime) -> None:
        made, _ = rt.ledger.create_plan(
            "p", "Plan", {"rule": "keep it"},
            steps=[_step("first", "a"), _step("second", "b", ["a"])], actor=OPERATOR)
        assert made == rt.store.plan(made.slug)

    def test_second_plan_with_same_slug_is_refused(self, rt: Runtime) -> None:
        rt.ledger.create_plan("auth-refresh", "One", actor=OPERATOR)
        with pytest.raises(errors.PlanExists, match='plan "auth-refresh" already exists'):
            rt.ledger.create_plan("auth-refresh", "Two", actor=OPERATOR)

    def test_bad_slug_is_refused_with_the_field_named(self, rt: Runtime) -> None:
        with pytest.raises(errors.InvalidInput, match="invalid slug"):
            rt.ledger.create_plan("Not A Slug!", "x", actor=OPERATOR)

    def test_unknown_self_and_cyclic_dependencies_are_refused_naming_steps(
        self, rt: Runtime
    ) -> None:
        a, b = self.two_steps(rt)
        with pytest.raises(errors.UnknownDependency, match="NOPE"):
            rt.ledger.add_step("p", "third", depends_on=["NOPE"], actor=OPERATOR)
        with pytest.raises(errors.SelfDependency, match=a):
            rt.ledger.declare_dependencies(a, [a], actor=OPERATOR)
        with pytest.raises(errors.DependencyCycle) as cycle:
            rt.ledger.declare_dependencies(a, [b], actor=OPERATOR)
        assert cycle.value.cycle == [a, b, a]
        assert str(cycle.value) == "dependency cycle: p#1 -> p#2 -> p#1"  # as people say them

    def test_revise_and_declare_change_the_step(self, rt: Runtime) -> None:
        a, b = self.two_steps(rt)
        c = rt.ledger.add_step("p", "third", actor=OPERATOR)
        rt.ledger.revise_step(c, title="third, revised", body="details", actor=OPERATOR)
        rt.ledger.declare_dependencies(c, [a, b], actor=OPERATOR)
        _, definition, _ = rt.ledger.step(c)
        assert (definition.title, definition.body) == ("third, revised", "details")
        assert definition.depends_on == (a, b)

    # --- claims -------------------------------------------------------------------

    def test_claim_grants_lease_and_first_fence(self, rt: Runtime, clock: FakeClock) -> None:
        a, _ = self.two_steps(rt)
        s = rt.ledger.start_session("agent")
        grant = rt.ledger.claim(a, s.id, lease_seconds=60)
        assert (grant.fence, grant.renewed) == (1, False)
        assert grant.expires_at == clock.advance(60)

    def test_second_claim_on_live_lease_bounces_naming_holder(self, rt: Runtime) -> None:
        a, _ = self.two_steps(rt)
        winner, loser = rt.ledger.start_session("B"), rt.ledger.start_session("A")
        rt.ledger.claim(a, winner.id)
        with pytest.raises(errors.AlreadyClaimed) as bounce:
            rt.ledger.claim(a, loser.id)
        assert str(bounce.value) == (
            'task already claimed: held by "' + winner.id + '" (B) (step p#1 "first")'
        )
        assert (bounce.value.holder_name, bounce.value.retry_after) == ("B", 900)
        recorded = [e for e in self.log(rt) if isinstance(e, ev.ClaimBounced)]
        assert [(e.originator_id, e.holder, e.step_id) for e in recorded] == [
            (loser.id, winner.id, a)
        ]

    def test_blocked_claim_names_each_blocker_and_its_status(self, rt: Runtime) -> None:
        a, b = self.two_steps(rt)
        s = rt.ledger.start_session()
        with pytest.raises(errors.Blocked) as blocked:
            rt.ledger.claim(b, s.id)
        # The message names steps by reference; the refusal's facts and event by id.
        assert str(blocked.value) == 'task blocked: step p#2 "second" waits on p#1 "first" (open)'
        assert blocked.value.blockers == [(a, "first", "open")]
        assert blocked.value.detail == (f'task blocked: step {b} "second" waits on {a} "first" '
                                        "(open)")

    def test_closed_claim_names_status(self, rt: Runtime) -> None:
        a, _ = self.two_steps(rt)
        s = rt.ledger.start_session()
        rt.ledger.drop(a, s.id)
        with pytest.raises(errors.Closed, match='step p#1 "first" is dropped'):
            rt.ledger.claim(a, s.id)

    def test_dropped_dependency_satisfies_dependent(self, rt: Runtime) -> None:
        a, b = self.two_steps(rt)
        s = rt.ledger.start_session()
        rt.ledger.drop(a, OPERATOR)
        assert rt.ledger.claim(b, s.id).fence == 1

    def test_heartbeat_extends_lease_and_keeps_fence(self, rt: Runtime, clock: FakeClock) -> None:
        a, _ = self.two_steps(rt)
        s = rt.ledger.start_session()
        first = rt.ledger.claim(a, s.id, lease_seconds=60)
        clock.advance(50)
        again = rt.ledger.claim(a, s.id, lease_seconds=60)
        beat = rt.ledger.heartbeat(a, s.id, lease_seconds=60)
        assert (again.renewed, again.fence, beat.fence) == (True, first.fence, first.fence)
        assert beat.expires_at == clock.advance(60)

    def test_lease_at_expiry_is_lapsed_and_next_grant_gets_larger_fence(
        self, rt: Runtime, clock: FakeClock
    ) -> None:
        a, _ = self.two_steps(rt)
        first, second = rt.ledger.start_session(), rt.ledger.start_session()
        rt.ledger.claim(a, first.id, lease_seconds=30)
        clock.advance(29.999)
        with pytest.raises(errors.AlreadyClaimed):
            rt.ledger.claim(a, second.id)
        clock.advance(0.001)  # expiry == now: lapsed
        assert rt.reads.ready("p") == [a]
        taken = rt.ledger.claim(a, second.id)
        assert (taken.fence, taken.took_over_from) == (2, first.id)

    def test_lapsed_holder_cannot_heartbeat(self, rt: Runtime, clock: FakeClock) -> None:
        a, _ = self.two_steps(rt)
        s = rt.ledger.start_session()
        rt.ledger.claim(a, s.id, lease_seconds=10)
        clock.advance(10)
        with pytest.raises(errors.NotHolder, match="not claimed by anyone"):
            rt.ledger.heartbeat(a, s.id)

    def test_stale_fence_completion_is_refused_naming_both_fences(
        self, rt: Runtime, clock: FakeClock
    ) -> None:
        a, _ = self.two_steps(rt)
        paused, other = rt.ledger.start_session("paused"), rt.ledger.start_session("other")
        old = rt.ledger.claim(a, paused.id, lease_seconds=10)
        clock.advance(11)
        rt.ledger.claim(a, other.id)
        with pytest.raises(errors.StaleFence) as stale:
            rt.ledger.complete(a, paused.id, fence=old.fence)
        assert str(stale.value) == (
            f"stale fence: step {a} is at fence 2, the call carried fence 1"
            f' (now held by "{other.id}")'
        )
        with pytest.raises(errors.NotHolder):
            rt.ledger.complete(a, paused.id)
        rt.ledger.complete(a, other.id, fence=2)
        completions = [e for e in self.log(rt) if isinstance(e, ev.StepCompleted)]
        assert [(e.session_id, e.fence) for e in completions] == [(other.id, 2)]
        assert any(isinstance(e, ev.StaleFenceRejected) for e in self.log(rt))

    def test_only_holder_may_release_and_release_frees_at_once(self, rt: Runtime) -> None:
        a, _ = self.two_steps(rt)
        holder, other = rt.ledger.start_session(), rt.ledger.start_session()
        rt.ledger.claim(a, holder.id)
        with pytest.raises(errors.NotHolder, match=f'held by "{holder.id}"'):
            rt.ledger.release(a, other.id)
        rt.ledger.release(a, holder.id)
        assert rt.ledger.claim(a, other.id).fence == 2

    def test_session_end_releases_each_held_step_as_its_own_event(self, rt: Runtime) -> None:
        a, b = self.two_steps(rt)
        c = rt.ledger.add_step("p", "third", actor=OPERATOR)
        s, other = rt.ledger.start_session(), rt.ledger.start_session()
        rt.ledger.claim(a, s.id)
        rt.ledger.claim(c, s.id)
        released = rt.ledger.end_session(s.id)
        assert sorted(released) == sorted([a, c])
        releases = [e for e in self.log(rt) if isinstance(e, ev.StepReleased)]
        assert sorted((e.originator_id, e.reason) for e in releases) == sorted(
            [(a, "session_ended"), (c, "session_ended")]
        )
        assert rt.ledger.claim(a, other.id).fence == 2
        with pytest.raises(errors.SessionClosed):
            rt.ledger.claim(b, s.id)

    def test_ended_holder_lapses_without_any_event(self, rt: Runtime) -> None:
        a, _ = self.two_steps(rt)
        s, other = rt.ledger.start_session(), rt.ledger.start_session()
        rt.ledger.claim(a, s.id)
        rt.store.append([ev.SessionEnded(s.id, 2, timestamp=rt.ledger.clock.now(),
                                         session_id=s.id, released=[])])
        assert rt.ledger.claim(a, other.id).fence == 2

    def test_reopen_of_done_step_makes_it_claimable(self, rt: Runtime) -> None:
        a, _ = self.two_steps(rt)
        s = rt.ledger.start_session()
        rt.ledger.claim(a, s.id)
        with pytest.raises(errors.NotReopenable):
            rt.ledger.reopen(a, OPERATOR)
        rt.ledger.complete(a, s.id)
        rt.ledger.reopen(a, OPERATOR)
        assert rt.ledger.claim(a, s.id).fence == 2

    def test_lease_outside_range_is_refused(self, rt: Runtime) -> None:
        a, _ = self.two_steps(rt)
        s = rt.ledger.start_session()
        for bad in (0, -5, 10**9):
            with pytest.raises(errors.InvalidInput, match="lease_seconds"):
                rt.ledger.claim(a, s.id, lease_seconds=bad)

    def test_unknown_ids_are_named(self, rt: Runtime) -> None:
        a, _ = self.two_steps(rt)
        s = rt.ledger.start_session()
        with pytest.raises(errors.UnknownStep, match="NOPE"):
            rt.ledger.claim("NOPE", s.id)
        with pytest.raises(errors.UnknownSession, match="session_start"):
            rt.ledger.claim(a, "NOPE")
        with pytest.raises(errors.UnknownStep):
            rt.ledger.claim(s.id, s.id)  # a session id is not a step id

    def test_claim_next_takes_oldest_ready_step(self, rt: Runtime) -> None:
        a, _ = self.two_steps(rt)
        s, t = rt.ledger.start_session(), rt.ledger.start_session()
        grant = rt.ledger.claim_next("p", s.id)
        assert grant is not None and grant.step_id == a
        assert rt.ledger.claim_next("p", t.id) is None

    # --- the seed ------------------------------------------------------------------

    def test_two_agents_one_step_story(self, rt: Runtime) -> None:
        steps = seed_auth_refresh(rt.ledger, race=True)
        step5, step6 = steps[4], steps[5]
        agent_b, agent_a = rt.ledger.start_session("agent B"), rt.ledger.start_session("agent A")
        assert rt.reads.ready("auth-refresh") == [step5, step6]
        rt.ledger.claim(step5, agent_b.id)
        with pytest.raises(errors.AlreadyClaimed, match=f'held by "{agent_b.id}"'):
            rt.ledger.claim(step5, agent_a.id)
        rt.ledger.claim(step6, agent_a.id)
        rt.ledger.complete(step5, agent_b.id)
        rt.ledger.complete(step6, agent_a.id)
        bounces = [e for e in self.log(rt) if isinstance(e, ev.ClaimBounced)]
        assert [(b.originator_id, b.holder, b.step_id) for b in bounces] == [
            (agent_a.id, agent_b.id, step5)
        ]
        assert all(rt.ledger.step(s)[0].status == "done" for s in steps)


def _step(title: str, key: str, deps: list[str] | None = None) -> NewStep:
    return NewStep(title, key=key, depends_on=deps or [])
