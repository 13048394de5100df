"""The live read model: steps, holders, sessions and plans folded from the notification log.

It follows the log by pulling notifications after the last position it applied, so events
appended by other processes show up on the next catch-up.
"""

import threading
from collections.abc import Sequence
from datetime import datetime

from ledger.domain import events as ev
from ledger.domain.claims import Verdict, assess, live_holder
from ledger.domain.ids import PlanSlug, SessionId, StepId
from ledger.domain.state import (
    PlanState,
    SessionState,
    StepState,
    evolve_plan,
    evolve_session,
    evolve_step,
)
from ledger.ports import CandidateView, Clock
from ledger.store import EventStore

PAGE = 1000


class ReadModel(CandidateView):
    def __init__(self, store: EventStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.position = 0
        self.plans: dict[PlanSlug, PlanState] = {}
        self.steps: dict[StepId, StepState] = {}
        self.sessions: dict[SessionId, SessionState] = {}
        self._held: dict[SessionId, set[StepId]] = {}
        self._lock = threading.RLock()

    def catch_up(self) -> int:
        """Apply every event appended since the last call; returns the new position."""
        with self._lock:
            while True:
                notes = self.store.recorder.select_notifications(
                    start=self.position, limit=PAGE, inclusive_of_start=False
                )
                for note in notes:
                    self.apply(self.store.mapper.to_domain_event(note))
                    self.position = note.id
                if len(notes) < PAGE:
                    return self.position

    def apply(self, event: object) -> None:
        if not isinstance(event, ev.LedgerEvent):
            return
        if isinstance(event, ev.PlanCreated | ev.StepAdded | ev.StepRevised
                      | ev.DependenciesDeclared):
            slug = PlanSlug(event.originator_id.removeprefix("plan:"))
            self.plans[slug] = evolve_plan(self.plans.get(slug), event)
        elif isinstance(event, ev.SessionStarted | ev.SessionEnded | ev.ClaimBounced
                        | ev.ClaimRefused | ev.StaleFenceRejected | ev.ReadyListed):
            sid = SessionId(event.originator_id)
            self.sessions[sid] = evolve_session(self.sessions.get(sid), event)
        else:
            self._apply_step(event)

    def _apply_step(self, event: ev.LedgerEvent) -> None:
        step_id = StepId(event.originator_id)
        before = self.steps.get(step_id)
        after = evolve_step(before, event)
        self.steps[step_id] = after
        if before is not None and before.holder is not None:
            self._held.get(before.holder, set()).discard(step_id)
        if after.holder is not None:
            self._held.setdefault(after.holder, set()).add(step_id)

    # --- CandidateView ------------------------------------------------------------

    def held_by(self, session: SessionId) -> Sequence[StepId]:
        with self._lock:
            self.catch_up()
            return sorted(self._held.get(session, ()))

    def ready(self, plan: PlanSlug) -> Sequence[StepId]:
        return [step_id for step_id, verdict in self.verdicts(plan) if verdict.kind == "claimable"]

    # --- queries ------------------------------------------------------------------

    def verdicts(self, plan: PlanSlug, now: datetime | None = None) -> list[tuple[StepId, Verdict]]:
        """Every open or in-progress step of the plan with what a claim would meet, oldest
        first, ties by id."""
        with self._lock:
            self.catch_up()
            moment = now or self.clock.now()
            state = self.plans[plan]
            ordered = sorted(state.steps.values(), key=lambda d: (d.added_at, d.id))
            result = []
            for definition in ordered:
                step = self.steps[definition.id]
                if step.status in ("done", "dropped"):
                    continue
                verdict = assess(step, definition, self._status, self._ended(step), moment)
                result.append((definition.id, verdict))
            return result

    def holder(self, step_id: StepId, now: datetime | None = None) -> SessionId | None:
        with self._lock:
            step = self.steps[step_id]
            return live_holder(step, now or self.clock.now(), self._ended(step))

    def _status(self, step_id: StepId) -> str:
        return self.steps[step_id].status

    def _ended(self, step: StepState) -> bool:
        if step.holder is None:
            return False
        session = self.sessions.get(step.holder)
        return session is not None and session.ended
