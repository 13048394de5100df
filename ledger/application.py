"""The write side: a command value in, its one handler run, its typed result out.

Every handler loads fresh state, decides with the pure domain, and appends the decision's
events in one transaction. When another writer moved a stream in between, the append
fails as a whole and the handler decides again on the new state; a decision is never
reused. Refusals worth auditing (bounces, stale fences) are appended before they are
raised, so a race can be read from the log alone.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from planledger.ledger import claim_handlers, key_handlers, plan_handlers, review_handlers
from planledger.ledger import commands as c
from planledger.ledger.commands import Command, Grant, NewStep
from planledger.ledger.domain.claims import DEFAULT_LEASE_SECONDS
from planledger.ledger.domain.ids import StepId
from planledger.ledger.domain.paths import PathSpec
from planledger.ledger.domain.state import PlanState, SessionState, StepDef, StepState
from planledger.ledger.execution import MAX_ATTEMPTS, Attach, Execution, Ports
from planledger.ledger.ports import CandidateView, Clock, IdGenerator
from planledger.ledger.references import resolve_step
from planledger.ledger.store import EventStore

__all__ = ["MAX_ATTEMPTS", "Grant", "Ledger", "NewStep"]

R = TypeVar("R")

# Each command's one handler, by its type.
HANDLERS: Mapping[type[Command[Any]], Callable[[Execution, Any], Any]] = {
    c.StartSession: plan_handlers.start_session,
    c.EndSession: plan_handlers.end_session,
    c.CreatePlan: plan_handlers.create_plan,
    c.AddStep: plan_handlers.add_step,
    c.ReviseStep: plan_handlers.revise_step,
    c.DeclareDependencies: plan_handlers.declare_dependencies,
    c.ListReady: plan_handlers.list_ready,
    c.Claim: claim_handlers.claim,
    c.Heartbeat: claim_handlers.heartbeat,
    c.ClaimNext: claim_handlers.claim_next,
    c.Complete: claim_handlers.complete,
    c.Release: claim_handlers.release,
    c.Drop: claim_handlers.drop,
    c.Reopen: claim_handlers.reopen,
    c.ForceRelease: claim_handlers.force_release,
    c.AddNote: claim_handlers.add_note,
    c.IssueKey: key_handlers.issue_key,
    c.RevokeKey: key_handlers.revoke_key,
    c.Review: review_handlers.review,
}
assert set(HANDLERS) == set(c.COMMANDS), "every command has one handler"


class Ledger(Ports):
    """`Ledger(store, clock, ids, view)`: runs commands. Interfaces (HTTP, MCP, the CLI,
    replays) build a command and call `execute`, through their middleware."""

    def __init__(self, store: EventStore, clock: Clock, ids: IdGenerator,
                 view: CandidateView, lease_default: int = DEFAULT_LEASE_SECONDS) -> None:
        super().__init__(store, clock, ids, view, lease_default)
        self.plain = Execution(self)  # the run of every command that attaches nothing

    def execute(self, command: Command[R], attach: Attach | None = None) -> R:
        """Run the command's handler; `attach` adds facts to the append that answers it."""
        run = self.plain if attach is None else Execution(self, attach)
        result: R = HANDLERS[type(command)](run, command)
        return result

    # --- reads the interfaces share ---------------------------------------------------

    def step(self, step_id: str, *, fresh: bool = True) -> tuple[StepState, StepDef, PlanState]:
        return self.plain.step(step_id, fresh=fresh)

    def live_session(self, session_id: str) -> SessionState:
        return self.plain.live_session(session_id)

    def resolve_step(self, text: str) -> StepId:
        """The id of the step an id or a reference (`plan#N`, `plan/key`, a bare key)
        names (ledger.references)."""
        return resolve_step(self.store, self.view, text)

    # --- shorthands: a command built and executed, for tests, benches and scripts -------

    def start_session(self, name: str | None = None) -> SessionState:
        return self.execute(c.StartSession(name))

    def end_session(self, session_id: str) -> list[StepId]:
        return list(self.execute(c.EndSession(session_id)).released)

    def create_plan(
        self, slug: str, title: str, constraints: dict[str, str] | None = None,
        steps: Sequence[NewStep] = (), *, actor: str,
    ) -> tuple[PlanState, list[StepId]]:
        made = self.execute(c.CreatePlan(
            slug, title, actor, tuple((constraints or {}).items()),
            tuple(replace(s, depends_on=tuple(s.depends_on), paths=tuple(s.paths))
                  for s in steps)))
        return made.plan, list(made.step_ids)

    def add_step(self, plan: str, title: str, body: str = "", depends_on: Sequence[str] = (),
                 *, actor: str) -> StepId:
        return self.execute(c.AddStep(plan, title, actor, body, tuple(depends_on))).step.id

    def revise_step(self, step_id: str, title: str | None = None, body: str | None = None,
                    *, actor: str) -> None:
        self.execute(c.ReviseStep(step_id, actor, title, body))

    def declare_dependencies(self, step_id: str, depends_on: Sequence[str], *,
                             actor: str) -> None:
        self.execute(c.DeclareDependencies(step_id, tuple(depends_on), actor))

    def list_ready(self, plan: str, session_id: str) -> list[StepId]:
        return list(self.execute(c.ListReady(plan, session_id)).step_ids)

    def claim(self, step_id: str, session_id: str, lease_seconds: int | None = None,
              paths: Sequence[PathSpec] = ()) -> Grant:
        return self.execute(c.Claim(step_id, session_id, lease_seconds, tuple(paths)))

    def heartbeat(self, step_id: str, session_id: str,
                  lease_seconds: int | None = None) -> Grant:
        return self.execute(c.Heartbeat(step_id, session_id, lease_seconds))

    def claim_next(self, plan: str, session_id: str,
                   lease_seconds: int | None = None) -> Grant | None:
        return self.execute(c.ClaimNext(plan, session_id, lease_seconds)).grant

    def complete(self, step_id: str, session_id: str, fence: int | None = None) -> None:
        self.execute(c.Complete(step_id, session_id, fence))

    def release(self, step_id: str, session_id: str, fence: int | None = None) -> None:
        self.execute(c.Release(step_id, session_id, fence))

    def drop(self, step_id: str, actor: str, fence: int | None = None) -> None:
        self.execute(c.Drop(step_id, actor, fence))

    def reopen(self, step_id: str, actor: str) -> None:
        self.execute(c.Reopen(step_id, actor))

    def force_release(self, step_id: str, actor: str) -> bool:
        return self.execute(c.ForceRelease(step_id, actor)).released
