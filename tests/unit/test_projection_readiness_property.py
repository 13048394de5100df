"""Readiness against a reference computed independently, over random plans and histories.

The reference below is written from the design's words, not from the domain's code: a
step is claimable when it is open, or its claim lapsed (lease at or past expiry, or its
session ended), and every dependency is done or dropped. It is kept by the test from the
commands that succeeded. After every command the read model must list exactly the
reference's claimable steps (oldest first, ties by id, lapsed holders named), its
blocked steps with their blockers, and its counts; and a claim must land exactly when
the reference calls the step claimable.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug, StepId
from tests.support import OPERATOR
from tests.support.fakes import EPOCH, FakeClock, SequentialIds

PLAN = PlanSlug("p")
SATISFIED = ("done", "dropped")


@dataclass
class Reference:
    order: list[StepId]
    deps: dict[StepId, set[StepId]]
    status: dict[StepId, str] = field(default_factory=dict)
    holder: dict[StepId, str] = field(default_factory=dict)
    expiry: dict[StepId, datetime] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)

    def live(self, step: StepId, now: datetime) -> str | None:
        if self.status[step] != "in_progress":
            return None
        who = self.holder[step]
        return None if who in self.ended or now >= self.expiry[step] else who

    def blockers(self, step: StepId) -> list[StepId]:
        return [d for d in self.order if d in self.deps[step] and self.status[d] not in SATISFIED]

    def claimable(self, now: datetime) -> list[tuple[StepId, str | None]]:
        return [(s, self.holder.get(s) if self.status[s] == "in_progress" else None)
                for s in self.order if self.status[s] not in SATISFIED
                and self.live(s, now) is None and not self.blockers(s)]

    def blocked(self, now: datetime) -> list[tuple[StepId, list[StepId]]]:
        return [(s, self.blockers(s)) for s in self.order if self.status[s] not in SATISFIED
                and self.live(s, now) is None and self.blockers(s)]


dags = st.integers(2, 9).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.lists(st.integers(0, n - 1), max_size=3), min_size=n, max_size=n)))
commands = st.lists(st.tuples(
    st.sampled_from(["claim", "claim", "complete", "drop", "release", "reopen", "end",
                     "tick", "declare"]),
    st.integers(0, 8), st.integers(0, 2), st.integers(1, 120)), max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dag=dags, script=commands)
def test_ready_and_blocked_match_an_independent_reference(
    dag: tuple[int, list[list[int]]], script: list[tuple[str, int, int, int]]
) -> None:
    count, raw_deps = dag
    clock = FakeClock()
    rt = open_runtime("memory", clock=clock, ids=SequentialIds())
    deps = [sorted({d for d in raw_deps[i] if d < i}) for i in range(count)]
    steps = _create(rt, deps, clock)
    ref = Reference(list(steps), {s: {steps[d] for d in deps[i]} for i, s in enumerate(steps)},
                    status=dict.fromkeys(steps, "open"))
    sessions = [rt.ledger.start_session(f"agent {i}").id for i in range(3)]
    for kind, step_index, who, amount in script:
        step, session = steps[step_index % count], sessions[who]
        _run(rt, ref, clock, kind, step, session, amount, steps)
        _check(rt, ref, clock.now())
    rt.close()


def _create(rt: Runtime, deps: list[list[int]], clock: FakeClock) -> list[StepId]:
    """One plan, steps added one by one; pairs of steps share a moment, so that some
    ties in age are broken by id."""
    rt.ledger.create_plan(PLAN, "Plan", actor=OPERATOR)
    steps: list[StepId] = []
    for index, wanted in enumerate(deps):
        clock.set(EPOCH + timedelta(seconds=index // 2))
        steps.append(rt.ledger.add_step(PLAN, f"s{index}",
                                        depends_on=[steps[d] for d in wanted], actor=OPERATOR))
    return steps


def _run(rt: Runtime, ref: Reference, clock: FakeClock, kind: str, step: StepId,
         session: str, amount: int, steps: list[StepId]) -> None:
    ledger, now = rt.ledger, clock.now()
    live = ref.live(step, now)
    if kind == "tick":
        clock.advance(amount)
    elif kind == "claim" and session not in ref.ended:
        expect = any(s == step for s, _ in ref.claimable(now)) or live == session
        try:
            ledger.claim(step, session, lease_seconds=amount)
        except (errors.AlreadyClaimed, errors.Blocked, errors.Closed):
            assert not expect, f"claim of a claimable step {step} was refused"
            return
        assert expect, f"claim of {step} landed though the reference says it is not claimable"
        ref.status[step], ref.holder[step] = "in_progress", session
        ref.expiry[step] = now + timedelta(seconds=amount)
    elif kind in ("complete", "release", "drop") and live is not None:
        getattr(ledger, kind)(step, live)
        ref.status[step] = {"complete": "done", "release": "open", "drop": "dropped"}[kind]
    elif kind == "drop" and ref.status[step] not in SATISFIED:
        ledger.drop(step, OPERATOR)
        ref.status[step] = "dropped"
    elif kind == "reopen" and ref.status[step] in SATISFIED:
        ledger.reopen(step, OPERATOR)
        ref.status[step] = "open"
    elif kind == "end" and session not in ref.ended:
        ledger.end_session(session)
        for s in steps:
            if ref.live(s, now) == session:
                ref.status[s] = "open"
        ref.ended.add(session)
    elif kind == "declare":
        earlier = steps[: steps.index(step)]
        if earlier:
            dep = earlier[amount % len(earlier)]
            ledger.declare_dependencies(step, [dep], actor=OPERATOR)
            ref.deps[step].add(dep)


def _check(rt: Runtime, ref: Reference, now: datetime) -> None:
    reads = rt.reads
    ready = reads.ready_steps(PLAN)
    assert [(r.step_id, r.lapsed_holder) for r in ready] == ref.claimable(now)
    assert list(reads.ready(PLAN)) == [s for s, _ in ref.claimable(now)]
    blocked = reads.blocked(PLAN)
    assert [(b.step_id, sorted(x.step_id for x in b.blockers)) for b in blocked] == [
        (s, sorted(blockers)) for s, blockers in ref.blocked(now)]
    progress = reads.progress(PLAN)
    in_flight = sum(1 for s in ref.order if ref.live(s, now) is not None)
    assert (progress.claimable, progress.blocked, progress.in_flight) == (
        len(ref.claimable(now)), len(ref.blocked(now)), in_flight)
    assert progress.done == sum(1 for s in ref.order if ref.status[s] == "done")
