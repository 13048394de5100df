"""The ledger's plumbing: deciding with optimistic concurrency, and the reads every
command shares. Commands live in `ledger.plan_commands` and `ledger.claim_commands`."""

import contextlib
from collections.abc import Callable
from datetime import datetime

from planledger.ledger.domain import errors
from planledger.ledger.domain.claims import Decision, live_holder
from planledger.ledger.domain.ids import Actor, SessionId, StepId, acting_session
from planledger.ledger.domain.state import PlanState, SessionState, StepDef, StepState
from planledger.ledger.ports import CandidateView, Clock, IdGenerator
from planledger.ledger.riders import with_riders
from planledger.ledger.store import ConflictError, EventStore

MAX_ATTEMPTS = 64


class LedgerCore:
    def __init__(
        self, store: EventStore, clock: Clock, ids: IdGenerator, view: CandidateView
    ) -> None:
        self.store = store
        self.clock = clock
        self.ids = ids
        self.view = view

    # --- plumbing -------------------------------------------------------------

    def _decide(self, stream: str, attempt: Callable[[datetime], Decision]) -> Decision:
        """Run `attempt` until its events append cleanly; raise its refusal afterwards.
        Each attempt decides at a fresh `now`: one that conflicted may have waited, and a
        lease judged at the first attempt's time could have lapsed since."""
        for _ in range(MAX_ATTEMPTS):
            try:
                with self.store.transaction():
                    decision = attempt(self.clock.now())
                    self.store.append(with_riders(decision))
            except ConflictError:
                continue
            if decision.refusal is not None:
                raise decision.refusal
            return decision
        raise errors.Contention(stream, MAX_ATTEMPTS)

    def _decide_on_cached_step(
        self, stream: str, attempt: Callable[[datetime, bool], Decision]
    ) -> Decision:
        """`_decide` for commands that append to the step they read: the first try takes
        the step from this process's cache (`attempt(now, False)`, no read). A stale step
        cannot land, as the version it appends at is taken (a conflict, then fresh tries);
        a refusal is decided again on fresh state before it is recorded or raised."""
        with contextlib.suppress(ConflictError), self.store.transaction():
            first = attempt(self.clock.now(), False)
            if first.refusal is None:
                self.store.append(with_riders(first))
                return first
        return self._decide(stream, lambda at: attempt(at, True))

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
