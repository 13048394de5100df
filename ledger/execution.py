"""One command's run: deciding with optimistic concurrency, and the reads handlers share.

A handler (`ledger.claim_handlers`, `ledger.plan_handlers`) asks its `Execution` to
decide: each attempt reads fresh state and returns an `Outcome` (the domain's decision
and the result the command answers if it lands); the decision's events are appended in
one transaction, with whatever the caller attaches to the outcome that answers the
command (an idempotent answer record: it lands with the write or not at all). When
another writer moved a stream in between, the append fails as a whole and the handler
decides again, at a fresh `now`.
"""

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Generic, TypeVar

from planledger.ledger.domain import errors
from planledger.ledger.domain.claims import Decision, live_holder
from planledger.ledger.domain.ids import Actor, SessionId, StepId, acting_session
from planledger.ledger.domain.state import PlanState, SessionState, StepDef, StepState
from planledger.ledger.ports import CandidateView, Clock, IdGenerator
from planledger.ledger.store import ConflictError, EventStore

R = TypeVar("R")
MAX_ATTEMPTS = 64


class Outcome(Generic[R]):
    """An attempt's decision, and what the command answers if it lands: `result` when
    the decision grants, its refusal otherwise. (A handler running a sub-command whose
    outcome is not its answer attaches nothing to it: claim-next's `as_next`.)

    Made by every attempt and read once: a plain class with slots, as a frozen dataclass
    paid a guarded attribute write per field."""

    __slots__ = ("decision", "result")

    def __init__(self, decision: Decision, result: R | None = None) -> None:
        self.decision = decision
        self.result = result

    def __repr__(self) -> str:
        return f"Outcome(decision={self.decision!r}, result={self.result!r})"


# Given the outcome about to be appended, the extra facts to append in its transaction.
Attach = Callable[[Outcome[Any]], Sequence[Any]]


class Ports:
    """What every command reads and decides with: the store, the clock, ids, ready lists."""

    def __init__(self, store: EventStore, clock: Clock, ids: IdGenerator,
                 view: CandidateView, lease_default: int) -> None:
        self.store = store
        self.clock = clock
        self.ids = ids
        self.view = view
        self.lease_default = lease_default


class Execution:
    """One command's run: the ports it reads and decides with, and what its caller
    attaches to the outcome that answers it. One that attaches nothing holds nothing of
    its command, so the ledger runs every such command on the same one (`Ledger.plain`);
    one that attaches is made for its command alone."""

    __slots__ = ("_attach", "clock", "ids", "lease_default", "ports", "store", "view")

    def __init__(self, ports: Ports, attach: Attach | None = None) -> None:
        self.ports = ports
        self.store = ports.store
        self.clock = ports.clock
        self.ids = ports.ids
        self.view = ports.view
        self.lease_default = ports.lease_default
        self._attach = attach

    # --- deciding ---------------------------------------------------------------------

    def append(self, outcome: Outcome[Any]) -> None:
        """Append the outcome's events and what the caller attaches, in one transaction."""
        attached = self._attach(outcome) if self._attach is not None else ()
        self.store.append([*outcome.decision.events, *attached])

    def decide(self, attempt: Callable[[datetime], Outcome[R]], stream: str) -> R:
        """Run `attempt` until its events append cleanly; raise its refusal afterwards.
        Each attempt decides at a fresh `now`: one that conflicted may have waited, and a
        lease judged at the first attempt's time could have lapsed since."""
        for _ in range(MAX_ATTEMPTS):
            try:
                with self.store.transaction():
                    outcome = attempt(self.clock.now())
                    self.append(outcome)
            except ConflictError:
                continue
            return _result(outcome)
        raise errors.Contention(stream, MAX_ATTEMPTS)

    def decide_on_cached_step(
        self, attempt: Callable[[datetime, bool], Outcome[R]], stream: str
    ) -> R:
        """`decide` for commands that append to the step they read: the first try takes
        the step from this process's cache (`attempt(now, False)`, no read). A stale step
        cannot land, as the version it appends at is taken (a conflict, then fresh tries);
        a refusal is decided again on fresh state before it is recorded or raised."""
        try:
            with self.store.transaction():
                first = attempt(self.clock.now(), False)
                if first.decision.refusal is None:
                    self.append(first)
                    assert first.result is not None, "a landed decision answers its command"
                    return first.result
        except ConflictError:
            pass
        return self.decide(lambda at: attempt(at, True), stream)

    def attaching(self, attach: Attach | None) -> "Execution":
        """This run with another attachment (a handler running a sub-command)."""
        return Execution(self.ports, attach)

    @property
    def attach(self) -> Attach | None:
        return self._attach

    # --- reads ------------------------------------------------------------------------

    def live_session(self, session_id: str) -> SessionState:
        session = self.store.session(SessionId(session_id))
        if session.ended:
            raise errors.SessionClosed(session.id)
        return session

    def step(self, step_id: str, *, fresh: bool = True) -> tuple[StepState, StepDef, PlanState]:
        step = self.store.step(StepId(step_id), cached=not fresh)
        plan = self.store.plan(step.plan)
        return step, plan.steps[step.id], plan

    def holder_ended(self, step: StepState, known: SessionState | None = None) -> bool:
        """Whether the step's holder ended its session. `known` is a session the caller
        has just read fresh: when it is the holder, it is not read again."""
        if step.holder is None:
            return False
        if known is not None and known.id == step.holder:
            return known.ended
        return self.store.session(step.holder).ended

    def current_holder(
        self, step: StepState, now: datetime, known: SessionState | None = None
    ) -> SessionId | None:
        return live_holder(step, now, self.holder_ended(step, known))

    def author(self, actor: str) -> Actor:
        """The write's author: a session (checked live), the admin or the local operator."""
        if not actor:
            raise errors.InvalidInput("actor", "every write names its author")
        session = acting_session(Actor(actor))
        if session is not None:
            self.live_session(session)
        return Actor(actor)


def _result(outcome: Outcome[R]) -> R:
    if outcome.decision.refusal is not None:
        raise outcome.decision.refusal
    assert outcome.result is not None, "a landed decision answers its command"
    return outcome.result
