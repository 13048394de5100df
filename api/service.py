"""The operations every interface offers (HTTP, MCP, CLI, console), schemas in and out.

Each write calls one ledger command, renders its answer through `api.views`, counts it
in the metrics and, given an idempotency key, records or replays its answer. Identity is
settled before: `actor` is the session the caller proved it speaks for. No rule lives here.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from api import views
from api.idempotency import Idempotency, Write, fingerprint
from api.identity import Identity
from api.metrics import Metrics
from api.runtime import Runtime
from api.schemas import (
    ClaimNextOut,
    ClaimOut,
    DependenciesIn,
    ForceReleaseOut,
    PlanCreatedOut,
    PlanIn,
    ReadyOut,
    SessionEndOut,
    SessionStartedOut,
    SessionStartOut,
    StepChangeOut,
    StepIn,
    StepRefOut,
    StepRevisionIn,
)
from api.settings import Settings
from ledger.application import Grant, NewStep
from ledger.domain import events as ev
from ledger.domain.claims import Decision
from ledger.domain.errors import LedgerError
from ledger.domain.ids import StepId
from ledger.domain.state import PlanState, fold_plan, fold_session
from projections.timeline import TimelineModel

R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)
Key = str | None


class Service:
    def __init__(self, runtime: Runtime, settings: Settings, identity: Identity,
                 metrics: Metrics | None = None) -> None:
        self.runtime = runtime
        self.ledger = runtime.ledger
        self.settings = settings
        self.identity = identity
        self.metrics = metrics or Metrics()
        self.idempotency = Idempotency(runtime)
        self.timelines = TimelineModel(runtime.store)  # follows the log on each query

    def _run(self, operation: str, args: dict[str, Any], write: Write[R, M], key: Key,
             scope: str | None) -> M:
        if key is None:
            return write.render(write.command())
        return self.idempotency.run(write, key, scope, fingerprint(operation, args))

    def _counted(self, command: Callable[[], R]) -> Callable[[], R]:
        def run() -> R:
            try:
                return command()
            except LedgerError as error:
                self.metrics.refused(error)
                raise
        return run

    # --- sessions ------------------------------------------------------------------

    def start_session(self, name: str | None = None, key: Key = None) -> SessionStartOut:
        """Start a session; its token is derived again on a replay, never recorded."""
        def render(state: Any) -> SessionStartedOut:
            return SessionStartedOut(session_id=state.id, name=state.name,
                                     started_at=state.started_at)

        write = Write(lambda: self.ledger.start_session(name), render, SessionStartedOut,
                      lambda d: fold_session(None, d.events))
        started = self._run("session.start", {"name": name}, write, key, None)
        return SessionStartOut(**dict(started),
                               token=self.identity.token_for(started.session_id))

    def end_session(self, actor: str, key: Key = None) -> SessionEndOut:
        def command() -> list[StepId]:
            released = self.ledger.end_session(actor)
            self.metrics.released("session_ended", len(released))
            return released

        write = Write(command, lambda ids: SessionEndOut(session_id=actor, released=ids),
                      SessionEndOut, lambda d: [StepId(e.originator_id) for e in d.events[:-1]])
        return self._run("session.end", {}, write, key, actor)

    # --- plans and steps -------------------------------------------------------------

    def create_plan(self, plan: PlanIn, actor: str | None = None, key: Key = None,
                    ) -> PlanCreatedOut:
        """Create the plan, its constraints and its steps in one transaction."""
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
                                                      new, actor), render, PlanCreatedOut,
                      of_decision)
        return self._run("plan.create", plan.model_dump(), write, key, actor)

    def add_step(self, slug: str, step: StepIn, actor: str | None = None, key: Key = None,
                 ) -> StepRefOut:
        def command() -> StepRefOut:
            step_id = self.ledger.add_step(slug, step.title, step.body, step.depends_on, actor)
            return _ref(*self.ledger.step(step_id)[1:])

        def of_decision(d: Decision) -> StepRefOut:
            added = d.events[0]
            assert isinstance(added, ev.StepAdded)
            return StepRefOut(step_id=added.step_id, plan=slug, title=added.title,
                              depends_on=added.depends_on)

        write = Write(command, _same, StepRefOut, of_decision)
        return self._run("step.add", {"plan": slug, **step.model_dump()}, write, key, actor)

    def revise_step(self, step_id: str, revision: StepRevisionIn, actor: str | None = None,
                    key: Key = None) -> StepRefOut:
        def command() -> StepRefOut:
            self.ledger.revise_step(step_id, revision.title, revision.body, actor)
            return _ref(*self.ledger.step(step_id)[1:])

        def of_decision(d: Decision) -> StepRefOut:
            before = _ref(*self.ledger.step(step_id)[1:])
            return before.model_copy(update={"title": revision.title or before.title})

        write = Write(command, _same, StepRefOut, of_decision)
        return self._run("step.revise", {"step": step_id, **revision.model_dump()}, write,
                         key, actor)

    def declare_dependencies(self, step_id: str, deps: DependenciesIn,
                             actor: str | None = None, key: Key = None) -> StepRefOut:
        def command() -> StepRefOut:
            self.ledger.declare_dependencies(step_id, deps.depends_on, actor)
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

    # --- claims ----------------------------------------------------------------------

    def _lease(self, lease_seconds: int | None) -> int:
        return self.settings.lease_default if lease_seconds is None else lease_seconds

    def _granted(self, grant: Grant) -> Grant:
        took = views.took_over(self.runtime, grant) if grant.fence > 1 else None
        self.metrics.granted(grant, took)
        return grant

    def _claim_write(self, command: Callable[[], Grant]) -> Write[Grant, ClaimOut]:
        return Write(self._counted(lambda: self._granted(command())),
                     lambda g: views.claim_out(self.runtime, g), ClaimOut,
                     lambda d: views.grant_of(d.events[0]))

    def claim(self, step_id: str, actor: str, lease_seconds: int | None = None,
              key: Key = None) -> ClaimOut:
        lease = self._lease(lease_seconds)
        write = self._claim_write(lambda: self.ledger.claim(step_id, actor, lease))
        return self._run("claim", {"step": step_id, "lease": lease}, write, key, actor)

    def heartbeat(self, step_id: str, actor: str, lease_seconds: int | None = None,
                  key: Key = None) -> ClaimOut:
        lease = self._lease(lease_seconds)
        write = self._claim_write(lambda: self.ledger.heartbeat(step_id, actor, lease))
        return self._run("heartbeat", {"step": step_id, "lease": lease}, write, key, actor)

    def claim_next(self, slug: str, actor: str, lease_seconds: int | None = None,
                   key: Key = None) -> ClaimNextOut:
        """Claim the plan's first ready step, skipping any lost to a race; or say why
        nothing is ready (all held, all blocked, all done)."""
        lease = self._lease(lease_seconds)

        def command() -> Grant | None:
            grant = self.ledger.claim_next(slug, actor, lease)
            return self._granted(grant) if grant else None

        def render(grant: Grant | None) -> ClaimNextOut:
            if grant is None:
                reason, message = views.nothing_ready(self.runtime, slug)
                return ClaimNextOut(claimed=None, reason=reason, message=message)
            claimed = views.claim_out(self.runtime, grant)
            return ClaimNextOut(claimed=claimed,
                                message=f'claimed step {claimed.step_id} "{claimed.title}"')

        write = Write(self._counted(command), render, ClaimNextOut,
                      lambda d: views.grant_of(d.events[0]), refusals_answer=False)
        return self._run("claim_next", {"plan": slug, "lease": lease}, write, key, actor)

    def _close(self, operation: str, close: Callable[[], None], step_id: str,
               status: Any, key: Key, scope: str | None, fence: int | None) -> StepChangeOut:
        def command() -> StepId:
            close()
            return StepId(step_id)

        write = Write(self._counted(command),
                      lambda s: StepChangeOut(step_id=s, status=status), StepChangeOut,
                      lambda d: StepId(step_id))
        return self._run(operation, {"step": step_id, "fence": fence}, write, key, scope)

    def complete(self, step_id: str, actor: str, fence: int | None = None,
                 key: Key = None) -> StepChangeOut:
        def close() -> None:
            self.ledger.complete(step_id, actor, fence)
            self.metrics.completions.inc()
        return self._close("complete", close, step_id, "done", key, actor, fence)

    def release(self, step_id: str, actor: str, fence: int | None = None,
                key: Key = None) -> StepChangeOut:
        def close() -> None:
            self.ledger.release(step_id, actor, fence)
            self.metrics.released("released")
        return self._close("release", close, step_id, "open", key, actor, fence)

    def drop(self, step_id: str, actor: str | None = None, fence: int | None = None,
             key: Key = None) -> StepChangeOut:
        def close() -> None:
            self.ledger.drop(step_id, actor, fence)
            self.metrics.drops.inc()
        return self._close("drop", close, step_id, "dropped", key, actor, fence)

    def reopen(self, step_id: str, actor: str | None = None, key: Key = None,
               ) -> StepChangeOut:
        return self._close("reopen", lambda: self.ledger.reopen(step_id, actor), step_id,
                           "open", key, actor, None)

    def force_release(self, step_id: str, key: Key = None) -> ForceReleaseOut:
        """An operator's release of whatever claim the step carries (admin only)."""
        def command() -> bool:
            released = self.ledger.force_release(step_id)
            self.metrics.released("forced", int(released))
            return released

        write = Write(command, lambda r: ForceReleaseOut(step_id=step_id, released=r),
                      ForceReleaseOut, lambda d: bool(d.events))
        return self._run("force_release", {"step": step_id}, write, key, "admin")


def _same(model: StepRefOut) -> StepRefOut:
    return model


def _ref(definition: Any, plan: PlanState) -> StepRefOut:
    return StepRefOut(step_id=definition.id, plan=plan.slug, title=definition.title,
                      depends_on=list(definition.depends_on))
