"""Commands on sessions and on a plan's structure (its steps and their dependencies)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from planledger.ledger.core import LedgerCore
from planledger.ledger.domain import closing, errors
from planledger.ledger.domain import plans as plan_rules
from planledger.ledger.domain.claims import Decision
from planledger.ledger.domain.events import LedgerEvent, SessionStarted
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.state import PlanState, SessionState, evolve_plan
from planledger.ledger.riders import with_riders
from planledger.ledger.store import ConflictError


@dataclass(frozen=True)
class NewStep:
    """A step to add with a new plan; `depends_on` names earlier `key`s or existing ids."""

    title: str
    body: str = ""
    depends_on: Sequence[str] = ()
    key: str | None = None


class PlanCommands(LedgerCore):
    # --- sessions -------------------------------------------------------------

    def start_session(self, name: str | None = None) -> SessionState:
        if name is not None:
            plan_rules.check_text("name", name, plan_rules.MAX_TITLE, required=False)
        session_id = SessionId(self.ids.new_id())
        now = self.clock.now()
        started = SessionStarted(session_id, 1, timestamp=now, session_id=session_id,
                                 actor=session_id, name=name or None)
        self.store.append(with_riders(Decision([started])))
        return self.store.session(session_id)

    def end_session(self, session_id: str) -> list[StepId]:
        """End the session and release, each as its own event, every step it holds."""
        # The read model catches up here, before the write transaction: its first read can
        # fold the whole log, and on SQLite every other writer would wait for it. Inside,
        # it is asked again and adds only what landed since.
        self.view.held_by(SessionId(session_id))

        def attempt(now: datetime) -> Decision:
            session = self.store.session(SessionId(session_id))
            held = [self.store.step(s) for s in self.view.held_by(session.id)]
            return closing.decide_end_session(session, held, now)

        decision = self._decide(session_id, attempt)
        return [StepId(e.originator_id) for e in decision.events[:-1]]

    # --- plans and steps ------------------------------------------------------

    def create_plan(
        self, slug: str, title: str, constraints: dict[str, str] | None = None,
        steps: Sequence[NewStep] = (), *, actor: str,
    ) -> tuple[PlanState, list[StepId]]:
        """Create a plan with its constraints and steps, all in one transaction."""
        who = self.author(actor)
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
        # The plan as folded here is the plan as stored: not read back (a thousand steps
        # are tens of milliseconds of CPU that other requests wait for).
        return plan, [StepId(e.originator_id) for e in events[2::2]]

    def add_step(
        self, plan: str, title: str, body: str = "", depends_on: Sequence[str] = (),
        *, actor: str,
    ) -> StepId:
        who = self.author(actor)
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
        *, actor: str,
    ) -> None:
        who = self.author(actor)

        def attempt(now: datetime) -> Decision:
            _, _, plan = self.step(step_id)
            return Decision([plan_rules.decide_revise_step(
                plan, StepId(step_id), title, body, who, now)])

        self._decide(step_id, attempt)

    def declare_dependencies(
        self, step_id: str, depends_on: Sequence[str], *, actor: str
    ) -> None:
        """Add dependencies; the plan's version serializes concurrent declarations, so two
        declarations that would close a cycle together cannot both land."""
        who = self.author(actor)

        def attempt(now: datetime) -> Decision:
            _, _, plan = self.step(step_id)
            return Decision([plan_rules.decide_declare_dependencies(
                plan, StepId(step_id), depends_on, who, now)])

        self._decide(step_id, attempt)


