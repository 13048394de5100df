"""Commands on claims: claim (and heartbeat), claim-next, complete, release, drop, reopen."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from planledger.ledger.core import LedgerCore
from planledger.ledger.domain import closing, errors
from planledger.ledger.domain.claims import (
    DEFAULT_LEASE_SECONDS,
    Decision,
    Verdict,
    assess,
    check_lease,
    decide_claim,
)
from planledger.ledger.domain.events import LeaseRenewed, ReadyListed, StepClaimed
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId, acting_session
from planledger.ledger.domain.state import SATISFYING, StepDef


@dataclass(frozen=True)
class Grant:
    """A claim that landed: new (`renewed` False) or the holder's heartbeat."""

    step_id: StepId
    session_id: SessionId
    fence: int
    expires_at: datetime
    renewed: bool
    plan: PlanSlug  # the step's plan and title, as the decision read them
    title: str
    took_over_from: SessionId | None = None  # the lapsed holder a new grant replaced


class ClaimCommands(LedgerCore):
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
        # Read before the write transaction: a read model's first read can fold the whole
        # log, and on SQLite every other writer would wait for it.
        shown: list[str] = list(self.view.ready(slug))

        def attempt(now: datetime) -> Decision:
            session = self.live_session(session_id)
            listed = ReadyListed(session.id, session.version + 1, timestamp=now,
                                 session_id=session.id, actor=session.id, plan=slug,
                                 step_ids=shown)
            return Decision([listed])

        event = self._decide(session_id, attempt).events[0]
        assert isinstance(event, ReadyListed)
        return [StepId(s) for s in event.step_ids]

    def complete(self, step_id: str, session_id: str, fence: int | None = None) -> None:
        self._close(closing.decide_complete, step_id, session_id, fence)

    def release(self, step_id: str, session_id: str, fence: int | None = None) -> None:
        self._close(closing.decide_release, step_id, session_id, fence)

    def drop(self, step_id: str, actor: str, fence: int | None = None) -> None:
        """Drop: the holder (a session), or any author while nobody holds the step."""
        who = self.author(actor)
        session_id = acting_session(who)

        def attempt(now: datetime) -> Decision:
            session = self.live_session(session_id) if session_id is not None else None
            step, definition, _ = self.step(step_id)
            holder = self.current_holder(step, now, session)
            return closing.decide_drop(step, definition, who, session, fence, holder, now)

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

    def force_release(self, step_id: str, actor: str) -> bool:
        """An operator's release of any claim on the step; False if there was none."""
        who = self.author(actor)

        def attempt(now: datetime) -> Decision:
            step = self.store.step(StepId(step_id))
            return closing.decide_force_release(step, self.current_holder(step, now), who, now)

        return bool(self._decide(step_id, attempt).events)

    def reopen(self, step_id: str, actor: str) -> None:
        who = self.author(actor)

        def attempt(now: datetime) -> Decision:
            return closing.decide_reopen(self.store.step(StepId(step_id)), who, now)

        self._decide(step_id, attempt)

