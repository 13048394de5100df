"""What the read models answer: plain frozen records, ready to print or serialise."""

from dataclasses import dataclass
from datetime import datetime

from planledger.ledger.domain.events import LedgerEvent
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId


@dataclass(frozen=True)
class ReadyStep:
    """A step a claim would accept now. `lapsed_holder` names the session whose lease
    lapsed (expired, or its session ended) when the step is claimable only because of it."""

    step_id: StepId
    plan: PlanSlug
    title: str
    position: int
    added_at: datetime
    lapsed_holder: SessionId | None = None
    lapsed_holder_name: str | None = None


@dataclass(frozen=True)
class ReviewStep:
    """A step waiting for a review: who finished it and, while one holds it, who reviews
    it (ledger.domain.review)."""

    step_id: StepId
    plan: PlanSlug
    title: str
    position: int
    added_at: datetime
    author: SessionId | None
    author_name: str | None = None
    reviewer: SessionId | None = None
    reviewer_name: str | None = None


@dataclass(frozen=True)
class Blocker:
    """A dependency that is neither done nor dropped."""

    step_id: StepId
    title: str
    status: str


@dataclass(frozen=True)
class BlockedStep:
    """A step that waits, and on what."""

    step_id: StepId
    plan: PlanSlug
    title: str
    position: int
    added_at: datetime
    blockers: tuple[Blocker, ...]


@dataclass(frozen=True)
class Holding:
    """A live claim: who holds the step, under which fence, until when."""

    step_id: StepId
    plan: PlanSlug
    title: str
    session_id: SessionId
    session_name: str | None
    fence: int
    lease_seconds: int
    expires_at: datetime
    seconds_left: float
    ref: str | None = None  # the step's reference in its plan (`plan#N`)


@dataclass(frozen=True)
class Progress:
    """A plan's counts; every step is in exactly one of done, dropped, in flight,
    claimable, blocked and in review. The one progress type: the API answers it as it is."""

    plan: PlanSlug
    title: str
    total: int
    done: int
    dropped: int
    in_flight: int
    claimable: int
    blocked: int
    # e.g. `4/6 done, 2 claimable, 0 in flight` (`, 1 in review`, `, 1 dropped` when any are)
    line: str
    rollup: str  # the line for a list of plans: `auth-refresh: 4/6 done, 2 claimable, ...`
    in_review: int = 0  # finished by their holders, waiting for a review

    @classmethod
    def of(cls, plan: PlanSlug, title: str, *, total: int, done: int, dropped: int,
           in_flight: int, claimable: int, blocked: int, in_review: int = 0) -> "Progress":
        counts = f"{done}/{total} done, {claimable} claimable, {in_flight} in flight"
        if in_review:
            counts += f", {in_review} in review"
        line = counts + (f", {dropped} dropped" if dropped else "")
        return cls(plan, title, total, done, dropped, in_flight, claimable, blocked, line,
                   f"{plan}: {counts}", in_review)


@dataclass(frozen=True)
class HistoryEntry:
    """One event about a step, with its place in the log."""

    position: int
    event: LedgerEvent

    @property
    def kind(self) -> str:
        return type(self.event).__name__

    @property
    def timestamp(self) -> datetime:
        return self.event.timestamp

    @property
    def session_id(self) -> str | None:
        return self.event.session_id
