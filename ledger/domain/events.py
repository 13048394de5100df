"""Events: frozen, past-tense facts. One class per fact.

Every event names its stream (`originator_id`), its place in it (`originator_version`),
the time it happened, the session it concerns (None for set-up done without one) and its
`actor`: who made the write (`ledger.domain.ids.Actor`: a session, the admin, or the local
operator). Events written before actors were recorded read `actor` None; `author_of`
names who made those as well as the log can (their session, if any).
Field values are JSON-friendly so that a stored event re-encodes to the same bytes.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar, Literal

# Why a holder let its step go: it said so, or the claim-next caller the grant was for had
# left before it was told (api.waiting releases such a grant at once).
HolderRelease = Literal["released", "caller_departed"]
HOLDER_RELEASES: tuple[HolderRelease, ...] = ("released", "caller_departed")
ReleaseReason = HolderRelease | Literal["session_ended", "forced"]
RefusalReason = Literal["blocked", "closed", "in_review"]
ReviewVerdict = Literal["approve", "reject"]
REVIEW_VERDICTS: tuple[ReviewVerdict, ...] = ("approve", "reject")
# Why a step closed with no claim: it arrived done (an import of finished work), or its last
# open child finished (ledger.domain.relations).
ClosedBy = Literal["created", "last_child"]
# Why a step opened again with no command of its own: a child of it was reopened (a parent
# is never done with an open child; ledger.domain.relations).
ReopenedBy = Literal["child_reopened"]
# Why a review was refused: its step was not in review, another reviewer holds it, or the
# reviewer is the completion's author (or a session started with the author's key).
ReviewRefusal = Literal["not_in_review", "held", "own_work", "same_key"]


# The name each event type is stored under (the event store's "topic"): fixed, not derived
# from where the class lives, so logs and recordings read alike whatever the package's
# import path (events were first written from the module `ledger.domain.events`).
TOPIC_PREFIX = "ledger.domain.events:"


@dataclass(frozen=True)
class LedgerEvent:
    """What every event carries: its stream, its place in it, when, for which session, by whom."""

    TOPIC: ClassVar[str]

    originator_id: str
    originator_version: int
    timestamp: datetime
    session_id: str | None
    actor: str | None = field(default=None, kw_only=True)

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls.TOPIC = f"{TOPIC_PREFIX}{cls.__qualname__}"


class LateFields:
    """Mixed into an event type that gained fields after events of it were first stored:
    those fields are left out of the stored form while unset (the class default stands
    in), so an event that does not use them is stored byte for byte as before and
    re-executed recordings still verify. Only these types pay for the check."""

    LATE_FIELDS: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        for name in self.LATE_FIELDS:
            if self.__dict__.get(name, 0) is None:
                object.__delattr__(self, name)


def author_of(event: LedgerEvent) -> str | None:
    """Who made the write: its actor, else (a log from before actors) its session."""
    return event.actor or event.session_id


# --- the plan stream: structure -------------------------------------------------


@dataclass(frozen=True)
class PlanCreated(LateFields, LedgerEvent):
    """A plan made, with its slug, title and constraints."""

    slug: str
    title: str
    constraints: dict[str, str]
    # True: a completion whose evidence reports a failed check is refused (None: not
    # required, and every plan made before the setting existed).
    require_checks_pass: bool | None = None
    # True: every step's completion waits for a review by another key (ledger.domain.review).
    review_required: bool | None = None
    LATE_FIELDS = ("require_checks_pass", "review_required")


@dataclass(frozen=True)
class StepAdded(LateFields, LedgerEvent):
    """A step added to a plan, with what it waits on."""

    step_id: str
    title: str
    body: str
    depends_on: list[str]
    priority: int | None = None  # 0 (highest) .. 4; None: the default
    review_required: bool | None = None  # True: its completion waits for a review
    # The step's name within its plan (`plan/key`, ledger.domain.references); None: none.
    key: str | None = None
    # Its relations (ledger.domain.relations; None: none): the parent step (an epic of the
    # plan) and the step it was discovered from, by id; free labels; other links, each
    # {"kind": ..., "target": ...} as given.
    parent: str | None = None
    discovered_from: str | None = None
    labels: list[str] | None = None
    links: list[dict[str, str]] | None = None
    LATE_FIELDS = ("priority", "review_required", "key", "parent", "discovered_from",
                   "labels", "links")


@dataclass(frozen=True)
class StepRevised(LateFields, LedgerEvent):
    """A step's title, body or priority changed (None: unchanged)."""

    step_id: str
    title: str | None
    body: str | None
    priority: int | None = None  # None: unchanged
    LATE_FIELDS = ("priority",)


@dataclass(frozen=True)
class DependenciesDeclared(LedgerEvent):
    """More steps the step waits on."""

    step_id: str
    depends_on: list[str]


# --- the step stream: lifecycle -------------------------------------------------


@dataclass(frozen=True)
class StepOpened(LedgerEvent):
    """A step's own stream begun, naming its plan."""

    plan: str


@dataclass(frozen=True)
class StepClaimed(LedgerEvent):
    """The step granted to a session under a new fence, until `expires_at`."""

    fence: int
    lease_seconds: int
    expires_at: datetime


@dataclass(frozen=True)
class LeaseRenewed(LedgerEvent):
    """The holder's heartbeat: the same fence, a lease ending later."""

    fence: int
    lease_seconds: int
    expires_at: datetime


@dataclass(frozen=True)
class StepReleased(LedgerEvent):
    """The step let go by its holder, its session's end, or the admin; `reason` says which
    (and "caller_departed": a grant nobody heard of, let go by the server for its holder)."""

    fence: int
    holder: str
    reason: ReleaseReason


@dataclass(frozen=True)
class StepCompleted(LateFields, LedgerEvent):
    """The step done by the holder of `fence`, with the evidence it reported (None: none;
    the record of ledger.domain.evidence.Evidence: commits, branch, pr, checks). `reason`
    set: done with no claim, in the write that made it ("created": it arrived done) or that
    finished its last open child ("last_child"); `fence` is then the step's current one."""

    fence: int
    evidence: dict[str, object] | None = None
    reason: ClosedBy | None = None
    LATE_FIELDS = ("evidence", "reason")


@dataclass(frozen=True)
class StepSubmitted(LedgerEvent):
    """The step's work finished by the holder of `fence`, with the evidence it reported,
    on a step that needs a review: its claim ends and it waits in review, not done."""

    fence: int
    evidence: dict[str, object] | None


@dataclass(frozen=True)
class ReviewClaimed(LedgerEvent):
    """A step in review taken by a reviewer under a new fence, until `expires_at`, so two
    reviewers never review it at once."""

    fence: int
    lease_seconds: int
    expires_at: datetime


@dataclass(frozen=True)
class StepReviewed(LedgerEvent):
    """A review's verdict by a session other than the completion's `author`: "approve"
    makes the step done, "reject" opens it again (the reviewer's note follows it)."""

    verdict: ReviewVerdict
    author: str
    fence: int


@dataclass(frozen=True)
class StepDropped(LedgerEvent):
    """The step given up for good (fence None: dropped while nobody held it)."""

    fence: int | None


@dataclass(frozen=True)
class StepReopened(LateFields, LedgerEvent):
    """A done or dropped step open again. `reason` set: reopened with no command of its
    own, in the write that reopened a child of it ("child_reopened")."""

    reason: ReopenedBy | None = None
    LATE_FIELDS = ("reason",)


@dataclass(frozen=True)
class StepNoted(LedgerEvent):
    """A handoff note on the step: left alone, or with a release, drop or completion
    (`after`), for whoever picks the step up next."""

    text: str
    after: str | None = None  # "release", "drop" or "complete": the close it came with


# --- the session stream: identity and refused attempts -------------------------


@dataclass(frozen=True)
class SessionStarted(LateFields, LedgerEvent):
    """An agent's session begun."""

    name: str | None
    # Where the agent works, as it said (older logs: None): its directory, its client
    # (e.g. "claude-code") and its model.
    cwd: str | None = None
    source: str | None = None
    model: str | None = None
    # The access key the session was started with and the role it took from it (None:
    # started while the store held no key, or before keys existed).
    key: str | None = None
    role: str | None = None
    LATE_FIELDS = ("cwd", "source", "model", "key", "role")


@dataclass(frozen=True)
class SessionEnded(LateFields, LedgerEvent):
    """A session ended, with the steps that released."""

    released: list[str]
    findings: str | None = None  # what the agent reported when it stopped
    LATE_FIELDS = ("findings",)


@dataclass(frozen=True)
class ClaimBounced(LedgerEvent):
    """A claim refused because another session holds the step."""

    step_id: str
    holder: str
    holder_fence: int
    lease_seconds: int


@dataclass(frozen=True)
class ClaimRefused(LedgerEvent):
    """A claim refused because the step is blocked or closed."""

    step_id: str
    reason: RefusalReason
    detail: str
    lease_seconds: int


@dataclass(frozen=True)
class ReviewRefused(LedgerEvent):
    """A review (or a claim to review) refused, `reason` saying why, `detail` in words."""

    step_id: str
    reason: ReviewRefusal
    detail: str


@dataclass(frozen=True)
class StaleFenceRejected(LedgerEvent):
    """A complete / drop / release carrying a fence that is no longer current."""

    step_id: str
    action: str
    fence: int
    current_fence: int
    holder: str | None


@dataclass(frozen=True)
class ReadyListed(LedgerEvent):
    """The ready steps of a plan as a session was shown them: what an agent chose from."""

    plan: str
    step_ids: list[str]


# --- path reservations (ledger.domain.paths, ledger.domain.reservations) ----------------
# A path is carried as {"pattern": ..., "mode": "exclusive" | "shared"}.


@dataclass(frozen=True)
class PathsDeclared(LedgerEvent):
    """The paths a step will touch, as its plan now declares them (on the plan stream,
    after the step's StepAdded or on a revision): all of them, replacing any before."""

    step_id: str
    paths: list[dict[str, str]]


@dataclass(frozen=True)
class PathsReserved(LedgerEvent):
    """A claim's paths (its step's and the claim's own), reserved with its lease and fence
    on the store's one reservations stream, in the claim's append. The reservation lives
    while that claim does: a heartbeat renews both, a lapse or a close frees both, with no
    event. `freed`: steps whose reservations the claim found no longer live."""

    step_id: str
    fence: int
    paths: list[dict[str, str]]
    freed: list[str]


@dataclass(frozen=True)
class PathsBounced(LedgerEvent):
    """A claim refused because its paths overlap another live holder's reservation:
    `paths` it asked for (the step's and its own), `conflicts` each holder's step, fence
    and overlapping patterns."""

    step_id: str
    paths: list[dict[str, str]]
    conflicts: list[dict[str, object]]
    lease_seconds: int


# --- the key streams: access keys and their roles (ledger.domain.access) --------


@dataclass(frozen=True)
class KeyIssued(LedgerEvent):
    """An access key issued under a name, with a role; the store keeps only its digest."""

    name: str
    role: str
    digest: str


@dataclass(frozen=True)
class KeyRevoked(LedgerEvent):
    """The access key of this name revoked: it and every session started with it stop."""

    name: str


# The events of a step's own stream that change its status or holder (a note does
# not): ledger.store follows its own appends of them, the read model folds them.
STEP_STREAM_EVENTS: tuple[type[LedgerEvent], ...] = (
    StepOpened, StepClaimed, LeaseRenewed, StepReleased, StepCompleted, StepSubmitted,
    ReviewClaimed, StepReviewed, StepDropped, StepReopened)
