"""The questions every read model answers, live or as of a past point.

`ReadModel` is live and `AsOf` looks at a past point. Both use this one set of methods
over a view and a moment, so they answer alike."""

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from datetime import datetime

from planledger.ledger.domain.claims import Verdict, live_holder
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.projections import queries
from planledger.projections.results import (
    BlockedStep,
    Holding,
    Progress,
    ReadyStep,
    ReviewStep,
)
from planledger.projections.view import LedgerView

Reading = AbstractContextManager[tuple[LedgerView, datetime]]


class Queryable(ABC):
    """Ready, blocked, holders and progress; `now` defaults to the model's own moment."""

    @abstractmethod
    def reading(self, now: datetime | None = None) -> Reading:
        """The view to read and the moment to judge leases at, held steady for a block."""

    def ready_ids(self, plan: PlanSlug, now: datetime | None = None) -> list[StepId]:
        """Ids of the plan's claimable steps, oldest first, ties by id."""
        with self.reading(now) as (view, moment):
            return queries.ready_ids(view, plan, moment)

    def claim_order(self, plan: PlanSlug, now: datetime | None = None) -> list[StepId]:
        """Ids of the plan's claimable steps in the order claim-next tries them: by
        priority, then the longest chain waiting on them first, then oldest first."""
        with self.reading(now) as (view, moment):
            return queries.claim_order(view, plan, moment)

    def ready_steps(
        self, plan: PlanSlug | None = None, now: datetime | None = None
    ) -> list[ReadyStep]:
        """Claimable steps of a plan (all plans when None), lapsed holders named."""
        with self.reading(now) as (view, moment):
            return queries.ready_steps(view, plan, moment)

    def to_review(
        self, plan: PlanSlug | None = None, now: datetime | None = None
    ) -> list[ReviewStep]:
        """Steps waiting for a review (of one plan, or all), each with its author and its
        reviewer while one holds it."""
        with self.reading(now) as (view, moment):
            return queries.review_steps(view, plan, moment)

    def review_order(self, plan: PlanSlug, now: datetime | None = None) -> list[StepId]:
        """Ids of the plan's steps in review that no reviewer holds, in the order
        claim-next(review) tries them: by priority, then oldest first."""
        with self.reading(now) as (view, moment):
            return [r.step_id for r in queries.review_steps(view, plan, moment, True)]

    def blocked(
        self, plan: PlanSlug | None = None, now: datetime | None = None
    ) -> list[BlockedStep]:
        """Blocked steps of a plan (all plans when None), each naming its blockers."""
        with self.reading(now) as (view, moment):
            return queries.blocked_steps(view, plan, moment)

    def verdicts(
        self, plan: PlanSlug, now: datetime | None = None
    ) -> list[tuple[StepId, Verdict]]:
        with self.reading(now) as (view, moment):
            return queries.verdicts(view, plan, moment)

    def holders(
        self, plan: PlanSlug | None = None, now: datetime | None = None
    ) -> list[Holding]:
        """Every live claim (of one plan, or all), soonest expiry first."""
        with self.reading(now) as (view, moment):
            return queries.holdings(view, moment, plan=plan)

    def holdings_of(self, session: SessionId, now: datetime | None = None) -> list[Holding]:
        """What one session holds now."""
        with self.reading(now) as (view, moment):
            return queries.holdings(view, moment, session=session)

    def holder(self, step_id: StepId, now: datetime | None = None) -> SessionId | None:
        """The session holding the step now, None when nobody does (or its claim lapsed)."""
        with self.reading(now) as (view, moment):
            step = view.step(step_id)
            return live_holder(step, moment, view.holder_ended(step))

    def progress(self, plan: PlanSlug, now: datetime | None = None) -> Progress:
        with self.reading(now) as (view, moment):
            return queries.progress(view, plan, moment)

    def progress_all(self, now: datetime | None = None) -> list[Progress]:
        """Every plan's progress, in slug order."""
        with self.reading(now) as (view, moment):
            return [queries.progress(view, plan, moment)
                    for plan in sorted([*view.indexes, *view.finished])]

    def plan_slugs(self) -> list[PlanSlug]:
        with self.reading() as (view, _):
            return sorted([*view.indexes, *view.finished])
