"""Running one command: optimistic concurrency, plus the reads that handlers share.

Handlers (`ledger.claim_handlers`, `ledger.plan_handlers`) decide through an `Execution`.
Each attempt reads fresh state and returns an `Outcome`: the domain's decision and the
result to return if it lands. The decision's events append in one transaction. The caller
may attach extra facts to that transaction, such as an idempotency record, so the record
lands with the write or not at all. If another writer changed a stream in the meantime,
the whole append fails. The handler then decides again at a fresh `now`.
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
    """The decision of one attempt, and the command's answer if the decision lands.

    The answer is `result` when the decision grants, and the refusal otherwise. A handler
    that runs a sub-command (claim-next's `as_next`) attaches nothing to the sub-command's
    outcome, because that outcome is not the handler's answer.

    Every attempt makes one, so this is a plain class with slots: a frozen dataclass
    costs a guarded attribute write per field."""

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
    """The ports a command decides with, and the extra facts its caller attaches.

    Commands that attach nothing share one Execution (`Ledger.plain`); it holds no
    per-command state. A command that attaches facts gets its own Execution."""

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
        """Run `attempt` until its events append cleanly, then return or raise its answer.

        Each attempt gets a fresh `now`. A conflicting attempt may have waited for a lock,
        and a lease that was live at the first attempt may have lapsed since."""
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
        """Like `decide`, for commands that append to the step they read.

        The first try reads the step from this process's cache (`attempt(now, False)`),
        which skips a store read. A stale cached step cannot land: its expected version is
        already taken, so the append conflicts and `decide` retries on fresh state. A
        refusal from the cached try is never trusted; it is decided again on fresh state
        before it is recorded or raised."""
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
        """A copy of this Execution with a different attachment, for a sub-command."""
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
        """Whether the step's holder has ended its session.

        `known` is a session the caller has just read fresh. If it is the holder, the
        store is not read again."""
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
        """The author of a write: a live session, the admin or the local operator."""
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
