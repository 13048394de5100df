"""Ports the application needs from outside: the time, new ids, and a view of the log.

Adapters live elsewhere (`infra.clock_ids` for the clock and ids, `projections` for the
view); tests pass fakes that subclass these.
"""

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime

from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId


class Clock(ABC):
    """Where the current time comes from (timezone-aware, UTC)."""

    @abstractmethod
    def now(self) -> datetime: ...


class IdGenerator(ABC):
    """Where new step and session ids come from (ULIDs in production)."""

    @abstractmethod
    def new_id(self) -> str: ...


class CandidateView(ABC):
    """A read model the application asks for candidates; it re-checks every one of them on
    fresh state before deciding, so a view that lags can cost a retry, never a wrong grant."""

    @abstractmethod
    def held_by(self, session: SessionId) -> Sequence[StepId]:
        """Steps the session held as of the latest log position."""

    @abstractmethod
    def ready(self, plan: PlanSlug) -> Sequence[StepId]:
        """Steps of the plan a claim would accept now, by priority, then oldest first (the
        order a ready list shows)."""

    @abstractmethod
    def claim_order(self, plan: PlanSlug) -> Sequence[StepId]:
        """The same steps in the order claim-next tries them: by priority, then the step
        heading the longest chain of open steps still waiting on it first (critical path
        first: 1 + the longest such chain among its dependents), then oldest first."""

    def review_order(self, plan: PlanSlug) -> Sequence[StepId]:
        """Steps of the plan waiting for a review that no reviewer holds, by priority, then
        oldest first (what claim-next hands a reviewer). A view of claims alone (a
        benchmark's) has none to offer."""
        return ()

    @abstractmethod
    def plans_with_key(self, key: str) -> Sequence[PlanSlug]:
        """The plans with a step of this key (`plan/key`), by slug: where a bare key may
        name a step (ledger.references checks it on fresh state)."""
