"""The operations every interface offers (HTTP, MCP, CLI, console), schemas in and out:
`Service` has them all (sessions, plans and steps here; the claim's life in claim_ops).

Each write calls one ledger command, renders its answer through `api.views`, counts it
in the metrics and, given an idempotency key, records or replays its answer. Identity is
settled before: `actor` is who the caller proved it speaks for (a session, the admin or
the local operator: `ledger.domain.ids.Actor`). No rule lives here.
"""

from typing import Any

from planledger.api import views
from planledger.api.claim_ops import ClaimOperations
from planledger.api.idempotency import Write
from planledger.api.operations import Key
from planledger.api.schemas import (
    TOKEN_ONLY_FIRST,
    DependenciesIn,
    PlanCreatedOut,
    PlanIn,
    ReadyOut,
    SessionEndOut,
    SessionStartedOut,
    SessionStartOut,
    StepIn,
    StepRefOut,
    StepRevisionIn,
)
from planledger.ledger.application import NewStep
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.claims import Decision
from planledger.ledger.domain.ids import StepId
from planledger.ledger.domain.state import PlanState, fold_plan, fold_session


class Service(ClaimOperations):
    """`Service(runtime, settings, identity)`: what HTTP, MCP, the CLI and the console call."""

    # --- sessions ------------------------------------------------------------------

    def start_session(self, name: str | None = None, key: Key = None) -> SessionStartOut:
        """Start a session. Its token is never recorded, and a replay (the same key) does
        not carry it: whoever repeats a key is not thereby the session's first caller."""
        def render(state: Any) -> SessionStartedOut:
            return SessionStartedOut(session_id=state.id, name=state.name,
                                     started_at=state.started_at)

        write = Write(lambda: self.ledger.start_session(name), render, SessionStartedOut,
                      lambda d: fold_session(None, d.events))
        answered = self._answer("session.start", {"name": name}, write, key, None)
        started = answered.model
        if answered.replayed:
            return SessionStartOut(**dict(started), token=None, replayed=True,
                                   note=TOKEN_ONLY_FIRST)
        return SessionStartOut(**dict(started),
                               token=self.identity.token_for(started.session_id))

    def end_session(self, actor: str, key: Key = None) -> SessionEndOut:
        def command() -> list[StepId]:
            released = self.ledger.end_session(actor)
            self.metrics.released("session_ended", len(released))
            return released

        write = Write(command, lambda ids: SessionEndOut(session_id=actor, released=list[str](ids)),
                      SessionEndOut, lambda d: [StepId(e.originator_id) for e in d.events[:-1]])
        return self._run("session.end", {}, write, key, actor)

    # --- plans and steps -------------------------------------------------------------

    def create_plan(self, plan: PlanIn, actor: str, key: Key = None) -> PlanCreatedOut:
        """Create the plan, its constraints and its steps in one transaction."""
        self.settings.check_steps_per_request(len(plan.steps))
        new = [NewStep(s.title, s.body, s.depends_on, s.key) for s in plan.steps]

        def render(made: tuple[PlanState, list[StepId]]) -> PlanCreatedOut:
            state, ids = made
            refs = [StepRefOut(step_id=i, key=s.key, plan=state.slug, title=s.title,
                               depends_on=list(state.steps[i].depends_on))
                    for i, s in zip(ids, plan.steps, strict=True)]
            return PlanCreatedOut(slug=state.slug, title=state.title,
                                  constraints=dict(state.constraints), steps=refs)

        def of_decision(d: Decision) -> tuple[PlanState, list[StepId]] | None:
            state = fold_plan(None, [e for e in d.events if not isinstance(e, ev.StepOpened)])
            ids = [StepId(e.originator_id) for e in d.events if isinstance(e, ev.StepOpened)]
            return (state, ids) if state is not None else None

        write = Write(lambda: self.ledger.create_plan(plan.slug, plan.title, plan.constraints,
                                                      new, actor=actor), render, PlanCreatedOut,
                      of_decision)
        return self._run("plan.create", plan.model_dump(), write, key, actor)

    def add_step(self, slug: str, step: StepIn, actor: str, key: Key = None) -> StepRefOut:
        def command() -> StepRefOut:
            step_id = self.ledger.add_step(slug, step.title, step.body, step.depends_on,
                                           actor=actor)
            return _ref(*self.ledger.step(step_id)[1:])

        def of_decision(d: Decision) -> StepRefOut:
            added = d.events[0]
            assert isinstance(added, ev.StepAdded)
            return StepRefOut(step_id=added.step_id, plan=slug, title=added.title,
                              depends_on=added.depends_on)

        write = Write(command, _same, StepRefOut, of_decision)
        return self._run("step.add", {"plan": slug, **step.model_dump()}, write, key, actor)

    def revise_step(self, step_id: str, revision: StepRevisionIn, actor: str,
                    key: Key = None) -> StepRefOut:
        def command() -> StepRefOut:
            self.ledger.revise_step(step_id, revision.title, revision.body, actor=actor)
            return _ref(*self.ledger.step(step_id)[1:])

        def of_decision(d: Decision) -> StepRefOut:
            before = _ref(*self.ledger.step(step_id)[1:])
            return before.model_copy(update={"title": revision.title or before.title})

        write = Write(command, _same, StepRefOut, of_decision)
        return self._run("step.revise", {"step": step_id, **revision.model_dump()}, write,
                         key, actor)

    def declare_dependencies(self, step_id: str, deps: DependenciesIn, actor: str,
                             key: Key = None) -> StepRefOut:
        def command() -> StepRefOut:
            self.ledger.declare_dependencies(step_id, deps.depends_on, actor=actor)
            return _ref(*self.ledger.step(step_id)[1:])

        def of_decision(d: Decision) -> StepRefOut:
            before = _ref(*self.ledger.step(step_id)[1:])
            declared = d.events[0]
            assert isinstance(declared, ev.DependenciesDeclared)
            return before.model_copy(update={
                "depends_on": [*before.depends_on, *declared.depends_on]})

        write = Write(command, _same, StepRefOut, of_decision)
        return self._run("step.depend", {"step": step_id, **deps.model_dump()}, write,
                         key, actor)

    def ready(self, slug: str, actor: str | None = None) -> ReadyOut:
        """The plan's ready, held and blocked steps; with an actor, the listing is recorded
        in its session stream (what the agent chose from)."""
        listed = self.ledger.list_ready(slug, actor) if actor else None
        return views.ready(self.runtime, slug, listed)




def _same(model: StepRefOut) -> StepRefOut:
    return model


def _ref(definition: Any, plan: PlanState) -> StepRefOut:
    return StepRefOut(step_id=definition.id, plan=plan.slug, title=definition.title,
                      depends_on=list(definition.depends_on))
