"""The ledger against a pure model, driven by hypothesis' stateful testing: a rule for every
command and one for the clock. Each command's answer (grant, renewal, or which refusal)
must be the model's; after every step at most one session holds each step, the ready list
is the model's, the write side's fences and holders are the model's, and a read model
rebuilt from the log equals the live one.

The model is written from the design's words, not from the domain's code.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from planledger.api.runtime import open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.projections.readmodel import ReadModel
from tests.support import OPERATOR
from tests.support.fakes import FakeClock, SequentialIds

PLAN = PlanSlug("p")
CLOSED = ("done", "dropped")
LEASES = st.sampled_from([1, 60, 300, 900])
PICK = st.integers(0, 10_000)
REFUSALS = {errors.AlreadyClaimed: "held", errors.Blocked: "blocked", errors.Closed: "closed",
            errors.StaleFence: "stale", errors.NotHolder: "not_holder",
            errors.SessionClosed: "ended", errors.NotReopenable: "not_reopenable",
            errors.DependencyCycle: "cycle", errors.SelfDependency: "self"}


@dataclass
class Step:
    deps: set[StepId]
    status: str = "open"
    holder: str | None = None
    fence: int = 0
    expires: datetime | None = None


@dataclass
class Model:
    steps: dict[StepId, Step] = field(default_factory=dict)  # in the order they were added
    ended: dict[str, bool] = field(default_factory=dict)

    def live(self, s: StepId, now: datetime) -> str | None:
        step = self.steps[s]
        if step.status != "in_progress" or step.holder is None or step.expires is None:
            return None
        return None if self.ended[step.holder] or now >= step.expires else step.holder

    def blocked(self, s: StepId) -> bool:
        return any(self.steps[d].status not in CLOSED for d in self.steps[s].deps)

    def ready(self, now: datetime) -> list[StepId]:
        return [s for s, step in self.steps.items() if step.status not in CLOSED
                and self.live(s, now) is None and not self.blocked(s)]

    def claim_order(self, now: datetime) -> list[StepId]:
        """`ready` as claim-next tries it: the longest chain of open steps waiting on a
        step first, then the order the steps were added."""
        def level(s: StepId) -> int:
            return 1 + max((level(d) for d, step in self.steps.items()
                            if s in step.deps and step.status not in CLOSED), default=0)

        return sorted(self.ready(now), key=lambda s: -level(s))

    def claim(self, s: StepId, who: str, lease: int, now: datetime) -> str:
        step, holder = self.steps[s], self.live(s, now)
        if self.ended[who]:
            return "ended"
        if step.status in CLOSED:
            return "closed"
        if holder is not None:
            if holder != who:
                return "held"
            # a renewal extends the lease, never moves its end earlier
            step.expires = max(step.expires, now + timedelta(seconds=lease))
            return "renewed"
        if self.blocked(s):
            return "blocked"
        step.status, step.holder, step.fence = "in_progress", who, step.fence + 1
        step.expires = now + timedelta(seconds=lease)
        return "granted"

    def close(self, s: StepId, who: str | None, fence: int | None, now: datetime,
              status: str) -> str:
        step, holder = self.steps[s], self.live(s, now)
        if who is not None and self.ended[who]:
            return "ended"
        if status == "dropped" and holder is None and step.status not in CLOSED and fence is None:
            return self._unhold(s, "dropped")
        if step.status in CLOSED:
            return "closed"  # to a session and an operator alike
        if who is None:
            return "not_holder"
        if fence is not None and fence != step.fence:
            return "stale"
        if holder != who:
            return "not_holder"
        return self._unhold(s, status)

    def _unhold(self, s: StepId, status: str) -> str:
        step = self.steps[s]
        step.status, step.holder, step.expires = status, None, None
        return "ok"

    def cycle(self, s: StepId, deps: list[StepId]) -> bool:
        seen, stack = set(), list(deps)
        while stack:
            d = stack.pop()
            if d == s:
                return True
            if d not in seen:
                seen.add(d)
                stack.extend(self.steps[d].deps)
        return False


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.runtime = open_runtime("memory", clock=self.clock, ids=SequentialIds())
        self.ledger, self.model = self.runtime.ledger, Model()
        self.sessions: list[str] = []

    def teardown(self) -> None:
        self.runtime.close()

    def answer(self, command: object) -> str:
        try:
            result = command() if callable(command) else None
        except errors.LedgerError as error:
            return REFUSALS.get(type(error), type(error).__name__)
        return "ok" if result is None or result is True else str(result)

    def step(self, pick: int) -> StepId:
        return list(self.model.steps)[pick % len(self.model.steps)]

    def session(self, pick: int) -> str:
        """Mostly a live session; one pick in eight may be an ended one."""
        live = [s for s in self.sessions if not self.model.ended[s]]
        pool = live if live and pick % 8 else self.sessions
        return pool[pick % len(pool)]

    def step_in(self, pick: int, statuses: tuple[str, ...]) -> StepId:
        """Mostly a step in one of `statuses` (when there is one), else any step."""
        some = [s for s, step in self.model.steps.items() if step.status in statuses]
        return some[pick % len(some)] if some and pick % 4 else self.step(pick)

    @initialize(deps=st.lists(st.lists(st.integers(0, 5), max_size=2), min_size=2, max_size=6),
                names=st.integers(1, 3))
    def create(self, deps: list[list[int]], names: int) -> None:
        new = [NewStep(f"step {i}", key=str(i), depends_on=sorted({str(d) for d in ds if d < i}))
               for i, ds in enumerate(deps)]
        _, ids = self.ledger.create_plan(PLAN, "a plan", steps=new, actor=OPERATOR)
        for made, step_id in zip(new, ids, strict=True):
            self.model.steps[step_id] = Step({ids[int(k)] for k in made.depends_on})
        for n in range(names):
            self.start_session(n)

    @rule(n=st.integers(0, 99))
    def start_session(self, n: int) -> None:
        session = self.ledger.start_session(f"agent {n}")
        self.sessions.append(session.id)
        self.model.ended[session.id] = False

    @precondition(lambda self: sum(not e for e in self.model.ended.values()) > 1)
    @rule(who=PICK)
    def end_session(self, who: int) -> None:
        s, now = self.session(who), self.clock.now()
        released = {x for x in self.model.steps if self.model.live(x, now) == s}
        expected = "ended" if self.model.ended[s] else "ok"
        got = self.answer(lambda: set(self.ledger.end_session(s)) == released or "wrong")
        assert got == expected, (got, expected)
        for x in released:
            self.model._unhold(x, "open")
        self.model.ended[s] = True

    @rule(what=PICK, who=PICK, lease=LEASES)
    def claim(self, what: int, who: int, lease: int) -> None:
        s, w, now = self.step(what), self.session(who), self.clock.now()
        fence = self.model.steps[s].fence
        expected = self.model.claim(s, w, lease, now)
        got = self.answer(lambda: self.ledger.claim(s, w, lease))
        if expected in ("granted", "renewed"):
            assert got.startswith("Grant("), (got, expected)
            grant = self.ledger.store.step(s)
            assert grant.fence == (fence + 1 if expected == "granted" else fence)
        else:
            assert got == expected, (got, expected)

    @rule(what=PICK, who=PICK, lease=LEASES)
    def heartbeat(self, what: int, who: int, lease: int) -> None:
        s, w, now = self.step_in(what, ("in_progress",)), self.session(who), self.clock.now()
        if self.model.live(s, now) == w:
            expected = self.model.claim(s, w, lease, now)
        else:
            expected = "ended" if self.model.ended[w] else "not_holder"
        got = self.answer(lambda: self.ledger.heartbeat(s, w, lease))
        assert got.startswith("Grant(") if expected == "renewed" else got == expected, (
            got, expected)

    @rule(who=PICK, lease=LEASES)
    def claim_next(self, who: int, lease: int) -> None:
        w, now = self.session(who), self.clock.now()
        ready = self.model.claim_order(now)
        got = self.answer(lambda: self.ledger.claim_next(PLAN, w, lease))
        if self.model.ended[w]:
            assert got == "ended"
        elif not ready:
            assert got == "ok"
        else:
            assert f"step_id='{ready[0]}'" in got, (got, ready)
            self.model.claim(ready[0], w, lease, now)

    @rule(what=PICK, who=PICK, fence=st.sampled_from([None, 0, -1]),
          action=st.sampled_from(["complete", "release", "drop", "drop-by-operator"]))
    def close(self, what: int, who: int, fence: int | None, action: str) -> None:
        s, now = self.step_in(what, ("in_progress",)), self.clock.now()
        w = None if action == "drop-by-operator" else self.session(who)  # None: no session
        sent = None if fence is None else self.model.steps[s].fence + fence
        status = {"complete": "done", "release": "open"}.get(action, "dropped")
        expected = self.model.close(s, w, sent, now, status)
        command = {"complete": self.ledger.complete, "release": self.ledger.release}.get(
            action, self.ledger.drop)
        got = self.answer(lambda: command(s, w or OPERATOR, sent))
        assert got == expected, (action, got, expected)

    @rule(what=PICK)
    def force_release(self, what: int) -> None:
        s = self.step_in(what, ("in_progress",))
        step = self.model.steps[s]
        expected = "ok" if step.status == "in_progress" else "False"
        assert self.answer(lambda: self.ledger.force_release(s, OPERATOR)) == expected
        if expected == "ok":
            self.model._unhold(s, "open")

    @rule(what=PICK)
    def reopen(self, what: int) -> None:
        s = self.step_in(what, CLOSED)
        closed = self.model.steps[s].status in CLOSED
        assert self.answer(lambda: self.ledger.reopen(s, OPERATOR)) == ("ok" if closed
                                                              else "not_reopenable")
        if closed:
            self.model._unhold(s, "open")

    @rule(deps=st.lists(PICK, max_size=2))
    def add_step(self, deps: list[int]) -> None:
        on = sorted({self.step(d) for d in deps})
        step_id = self.ledger.add_step(PLAN, "added", depends_on=on, actor=OPERATOR)
        self.model.steps[step_id] = Step(set(on))

    @rule(what=PICK, deps=st.lists(PICK, min_size=1, max_size=2))
    def declare_dependencies(self, what: int, deps: list[int]) -> None:
        s, on = self.step(what), sorted({self.step(d) for d in deps})
        expected = "self" if s in on else "cycle" if self.model.cycle(s, on) else "ok"
        assert self.answer(lambda: self.ledger.declare_dependencies(s, on,
            actor=OPERATOR)) == expected
        if expected == "ok":
            self.model.steps[s].deps |= set(on)

    @rule(what=PICK, who=PICK)
    def list_ready_and_revise(self, what: int, who: int) -> None:
        w = self.session(who)
        expected = "ended" if self.model.ended[w] else str(self.model.ready(self.clock.now()))
        assert self.answer(lambda: self.ledger.list_ready(PLAN, w)) == expected
        self.ledger.revise_step(self.step(what), title="revised", actor=OPERATOR)

    @rule(seconds=st.sampled_from([1, 59, 60, 61, 299, 300, 900, 901]))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)

    @invariant()
    def one_live_holder_per_step_and_the_models(self) -> None:
        reads, now = self.runtime.reads, self.clock.now()
        holding = {s: [w for w in self.sessions
                       if s in {h.step_id for h in reads.holdings_of(SessionId(w))}]
                   for s in self.model.steps}
        for s, step in self.model.steps.items():
            live = self.model.live(s, now)
            assert holding[s] == ([live] if live else []), (s, holding[s], live)
            assert reads.holder(s) == live
            stored = self.ledger.store.step(s)
            assert (stored.status, stored.fence) == (step.status, step.fence)

    @invariant()
    def ready_is_the_models(self) -> None:
        if self.model.steps:
            assert self.runtime.reads.ready_ids(PLAN) == self.model.ready(self.clock.now())

    @invariant()
    def a_rebuild_from_the_log_equals_the_live_read_model(self) -> None:
        rebuilt = ReadModel(self.runtime.store, self.clock)
        rebuilt.catch_up()
        self.runtime.reads.catch_up()
        assert rebuilt.facts() == self.runtime.reads.facts()


LedgerMachine.TestCase.settings = settings(
    max_examples=50, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_the_ledger_behaves_as_its_model = LedgerMachine.TestCase
