"""The write side: commands in, events appended with optimistic concurrency, refusals out.

Every command loads fresh state, decides with the pure domain, and appends the decision's
events in one transaction. When another writer moved a stream in between, the append
fails as a whole and the command decides again on the new state; a decision is never
reused. Refusals worth auditing (bounces, stale fences) are appended before they are
raised, so a race can be read from the log alone.
"""

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from ledger.domain import closing, errors
from ledger.domain import plans as plan_rules
from ledger.domain.claims import (
    DEFAULT_LEASE_SECONDS,
    Decision,
    Verdict,
    assess,
    check_lease,
    decide_claim,
    live_holder,
)
from ledger.domain.events import (
    LeaseRenewed,
    LedgerEvent,
    ReadyListed,
    SessionStarted,
    StepClaimed,
)
from ledger.domain.ids import PlanSlug, SessionId, StepId
from ledger.domain.state import (
    SATISFYING,
    PlanState,
    SessionState,
    StepDef,
    StepState,
    evolve_plan,
)
from ledger.ports import CandidateView, Clock, IdGenerator
from ledger.riders import with_riders
from ledger.store import ConflictError, EventStore

MAX_ATTEMPTS = 64
T = TypeVar("T")


@dataclass(frozen=True)
class NewStep:
    """A step to add with a new plan; `depends_on` names earlier `key`s or existing ids."""

    title: str
    body: str = ""
    depends_on: Sequence[str] = ()
    key: str | None = None


@dataclass(frozen=True)
class Grant:
    """A claim that landed: new (`renewed` False) or the holder's heartbeat."""

    step_id: StepId
    session_id: SessionId
    fence: int
    expires_at: datetime
    renewed: bool
    took_over_from: SessionId | None = None  # the lapsed holder a new grant replaced
    plan: PlanSlug | None = None  # the step's plan and title, as the decision read them
    title: str | None = None


class Ledger:
    """The plan ledger's commands. Interfaces (HTTP, MCP, CLI) call these and only these."""

    def __init__(
        self, store: EventStore, clock: Clock, ids: IdGenerator, view: CandidateView
    ) -> None:
        self.store = store
        self.clock = clock
        self.ids = ids
        self.view = view

    # --- plumbing -------------------------------------------------------------

    def _decide(
        self, stream: str, attempt: Callable[[datetime], Decision], now: datetime | None = None
    ) -> Decision:
        """Run `attempt` until its events append cleanly; raise its refusal afterwards."""
        now = now or self.clock.now()
        for _ in range(MAX_ATTEMPTS):
            decision = attempt(now)
            try:
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
        now = self.clock.now()
        first = attempt(now, False)
        if first.refusal is None:
            with contextlib.suppress(ConflictError):
                self.store.append(with_riders(first))
                return first
        return self._decide(stream, lambda at: attempt(at, True), now)

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

    # --- sessions -------------------------------------------------------------

    def start_session(self, name: str | None = None) -> SessionState:
        if name is not None:
            plan_rules.check_text("name", name, plan_rules.MAX_TITLE, required=False)
        session_id = SessionId(self.ids.new_id())
        now = self.clock.now()
        started = SessionStarted(session_id, 1, timestamp=now, session_id=session_id,
                                 name=name or None)
        self.store.append(with_riders(Decision([started])))
        return self.store.session(session_id)

    def end_session(self, session_id: str) -> list[StepId]:
        """End the session and release, each as its own event, every step it holds."""

        def attempt(now: datetime) -> Decision:
            session = self.store.session(SessionId(session_id))
            held = [self.store.step(s) for s in self.view.held_by(session.id)]
            return closing.decide_end_session(session, held, now)

        decision = self._decide(session_id, attempt)
        return [StepId(e.originator_id) for e in decision.events[:-1]]

    # --- plans and steps ------------------------------------------------------

    def create_plan(
        self, slug: str, title: str, constraints: dict[str, str] | None = None,
        steps: Sequence[NewStep] = (), actor: str | None = None,
    ) -> tuple[PlanState, list[StepId]]:
        """Create a plan with its constraints and steps, all in one transaction."""
        who = self._actor(actor)
        now = self.clock.now()
        created = plan_rules.decide_create_plan(slug, title, constraints or {}, who, now)
        plan = PlanState(id=created.originator_id, version=1, slug=PlanSlug(created.slug),
                         title=created.title, constraints=created.constraints, created_at=now)
        events: list[LedgerEvent] = [created]
        keys: dict[str, StepId] = {}
        for new in steps:
            step_id = StepId(self.ids.new_id())
            deps = [keys.get(d, StepId(d)) for d in new.depends_on]
            added, opened = plan_rules.decide_add_step(
                plan, plan.version + 1, step_id, new.title, new.body, deps, who, now)
            plan = evolve_plan(plan, added)  # our own fresh table: no copy needed
            events += [added, opened]
            if new.key:
                keys[new.key] = step_id
        try:
            self.store.append(with_riders(Decision(events)))
        except ConflictError:
            raise errors.PlanExists(plan.slug) from None
        return self.store.plan(plan.slug), [StepId(e.originator_id) for e in events[2::2]]

    def add_step(
        self, plan: str, title: str, body: str = "", depends_on: Sequence[str] = (),
        actor: str | None = None,
    ) -> StepId:
        who = self._actor(actor)
        step_id = StepId(self.ids.new_id())

        def attempt(now: datetime) -> Decision:
            state = self.store.plan(PlanSlug(plan))
            added, opened = plan_rules.decide_add_step(
                state, state.version + 1, step_id, title, body, depends_on, who, now)
            return Decision([added, opened])

        self._decide(plan, attempt)
        return step_id

    def revise_step(
        self, step_id: str, title: str | None = None, body: str | None = None,
        actor: str | None = None,
    ) -> None:
        who = self._actor(actor)

        def attempt(now: datetime) -> Decision:
            _, _, plan = self.step(step_id)
            return Decision([plan_rules.decide_revise_step(
                plan, StepId(step_id), title, body, who, now)])

        self._decide(step_id, attempt)

    def declare_dependencies(
        self, step_id: str, depends_on: Sequence[str], actor: str | None = None
    ) -> None:
        """Add dependencies; the plan's version serializes concurrent declarations, so two
        declarations that would close a cycle together cannot both land."""
        who = self._actor(actor)

        def attempt(now: datetime) -> Decision:
            _, _, plan = self.step(step_id)
            return Decision([plan_rules.decide_declare_dependencies(
                plan, StepId(step_id), depends_on, who, now)])

        self._decide(step_id, attempt)

    def _actor(self, actor: str | None) -> SessionId | None:
        return self.live_session(actor).id if actor is not None else None

    # --- claims -----------------------------------------------------------------

    def claim(
        self, step_id: str, session_id: str, lease_seconds: int = DEFAULT_LEASE_SECONDS
    ) -> Grant:
        """Claim a ready or lapsed step; the live holder's re-claim is its heartbeat."""
        check_lease(lease_seconds)
        judged: list[tuple[Verdict, StepDef, PlanSlug]] = []  # the last one landed

        def attempt(now: datetime, fresh: bool) -> Decision:
            session = self.live_session(session_id)
            step, definition, plan = self.step(step_id, fresh=fresh)

            def status_of(dep: StepId) -> str:
                return self.store.step(dep).status

            verdict = assess(step, definition, status_of, self.holder_ended(step, session), now)
            judged.append((verdict, definition, step.plan))
            return decide_claim(step, definition, verdict, session.id, session.version,
                                lease_seconds, lambda s: plan.steps[s].title, now)

        event = self._decide_on_cached_step(step_id, attempt).events[0]
        assert isinstance(event, StepClaimed | LeaseRenewed)
        renewed = isinstance(event, LeaseRenewed)
        verdict, definition, plan = judged[-1]
        lapsed = None if renewed or verdict.holder == session_id else verdict.holder
        return Grant(StepId(step_id), SessionId(session_id), event.fence, event.expires_at,
                     renewed=renewed, took_over_from=lapsed, plan=plan, title=definition.title)

    def heartbeat(
        self, step_id: str, session_id: str, lease_seconds: int = DEFAULT_LEASE_SECONDS
    ) -> Grant:
        """Extend the caller's live lease; refused (NotHolder) if it no longer holds."""
        step = self.store.step(StepId(step_id))
        holder = self.current_holder(step, self.clock.now())
        if holder != session_id:
            self.live_session(session_id)
            raise errors.NotHolder(step.id, session_id, holder)
        return self.claim(step_id, session_id, lease_seconds)

    def claim_next(
        self, plan: str, session_id: str, lease_seconds: int = DEFAULT_LEASE_SECONDS
    ) -> Grant | None:
        """Claim the first ready step of the plan, skipping steps lost to a race."""
        check_lease(lease_seconds)
        self.live_session(session_id)
        for candidate in self.view.ready(self.store.plan(PlanSlug(plan)).slug):
            if not self._still_free(candidate):
                continue  # the view lagged behind another claim: a read, not an attempt
            try:
                return self.claim(candidate, session_id, lease_seconds)
            except (errors.AlreadyClaimed, errors.Blocked, errors.Closed):
                continue
        return None

    def _still_free(self, step_id: StepId) -> bool:
        """Whether the step, read fresh, is neither closed nor held by a live claim. Racing
        agents all start from the same ready list; this read lets the ones that arrive after
        a winner move on without appending a bounce (a durable write) for a step they never
        asked for. A true race (both read it free) still bounces, and is recorded."""
        step = self.store.step(step_id)
        return step.status not in SATISFYING and self.current_holder(step, self.clock.now()) is None

    def list_ready(self, plan: str, session_id: str) -> list[StepId]:
        """The plan's ready steps as `session_id` is shown them, recorded (`ReadyListed`) so
        a timeline and a replay show what each agent chose from. Optional: plain reads of
        the read model record nothing."""
        slug = self.store.plan(PlanSlug(plan)).slug

        def attempt(now: datetime) -> Decision:
            session = self.live_session(session_id)
            listed = ReadyListed(session.id, session.version + 1, timestamp=now,
                                 session_id=session.id, plan=slug,
                                 step_ids=list(self.view.ready(slug)))
            return Decision([listed])

        event = self._decide(session_id, attempt).events[0]
        assert isinstance(event, ReadyListed)
        return [StepId(s) for s in event.step_ids]

    def complete(self, step_id: str, session_id: str, fence: int | None = None) -> None:
        self._close(closing.decide_complete, step_id, session_id, fence)

    def release(self, step_id: str, session_id: str, fence: int | None = None) -> None:
        self._close(closing.decide_release, step_id, session_id, fence)

    def drop(self, step_id: str, session_id: str | None = None, fence: int | None = None) -> None:
        def attempt(now: datetime) -> Decision:
            session = self.live_session(session_id) if session_id is not None else None
            step, definition, _ = self.step(step_id)
            holder = self.current_holder(step, now, session)
            return closing.decide_drop(step, definition, session, fence, holder, now)

        self._decide(step_id, attempt)

    def _close(
        self, decide: Callable[..., Decision], step_id: str, session_id: str, fence: int | None
    ) -> None:
        def attempt(now: datetime, fresh: bool) -> Decision:
            session = self.live_session(session_id)
            step, definition, _ = self.step(step_id, fresh=fresh)
            holder = self.current_holder(step, now, session)
            decision: Decision = decide(step, definition, session, fence, holder, now)
            return decision

        self._decide_on_cached_step(step_id, attempt)

    def force_release(self, step_id: str, actor: str | None = None) -> bool:
        """An operator's release of any claim on the step; False if there was none."""

        def attempt(now: datetime) -> Decision:
            step = self.store.step(StepId(step_id))
            who = SessionId(actor) if actor else None
            return closing.decide_force_release(step, self.current_holder(step, now), who, now)

        return bool(self._decide(step_id, attempt).events)

    def reopen(self, step_id: str, actor: str | None = None) -> None:
        who = self._actor(actor)

        def attempt(now: datetime) -> Decision:
            return closing.decide_reopen(self.store.step(StepId(step_id)), who, now)

        self._decide(step_id, attempt)
