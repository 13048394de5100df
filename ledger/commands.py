"""The ledger's operations as values: one frozen command type each, and its typed result.

Every interface builds one of these (HTTP routes, MCP tools, the CLI on either store,
`planledger.Client`, a replay re-executing a recording) and hands it to
`Ledger.execute`, which runs its one handler (`ledger/*_handlers.py`) and returns the
command's result type. Idempotency and metrics wrap that call once, whatever the command.

`actor` is who the caller proved it speaks for: a session id, the admin or the local
operator (`ledger.domain.ids.Actor`). Commands on a claim act for a session, so there
the actor must be a live session.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Generic, TypeVar

from planledger.ledger.domain.access import KeyState
from planledger.ledger.domain.events import HolderRelease
from planledger.ledger.domain.evidence import Evidence
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.paths import PathSpec
from planledger.ledger.domain.state import Link as Link  # noqa: PLC0414 (NewStep's, AddStep's)
from planledger.ledger.domain.state import (
    Note,
    PlanState,
    SessionState,
    Status,
    StepDef,
)

R = TypeVar("R")


class Command(Generic[R]):
    """A request to change the ledger, answered by an `R`. `name` is the operation's
    stable name (idempotency fingerprints, metrics, recordings)."""

    name: ClassVar[str]
    actor: str


# --- results ---------------------------------------------------------------------------


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
    notes: tuple[Note, ...] = ()  # a new grant: the newest notes left since the last claim
    notes_left_out: int = 0  # older notes left since then, not carried (the log has them)
    paths: tuple[PathSpec, ...] = ()  # what the claim holds reserved (ledger.domain.paths)
    review: bool = False  # a reviewer's hold on a step in review (ledger.domain.review)
    ref: str | None = None  # the step's reference, `plan#N` (ledger.domain.references)
    # What the claim should know of its paths (ledger.domain.paths: wide_patterns)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class NextClaim:
    """What claim-next found: a grant, or none (nothing was ready to take)."""

    plan: PlanSlug
    grant: Grant | None
    review: bool = False  # it looked for a step to review (ClaimNext.review)


@dataclass(frozen=True)
class StepChanged:
    """A step's new status after complete (`in_review` when it waits for a review),
    release, drop, reopen or review."""

    step_id: StepId
    plan: PlanSlug
    status: Status
    ref: str | None = None  # the step's reference, `plan#N`
    # A completion asked to claim the next step too (Complete.claim_next): what it found.
    next: "NextClaim | None" = None


@dataclass(frozen=True)
class NoteAdded:
    step_id: StepId
    plan: PlanSlug
    note: Note
    ref: str | None = None  # the step's reference, `plan#N`


@dataclass(frozen=True)
class ForceReleased:
    step_id: StepId
    released: bool  # False: nobody held it


@dataclass(frozen=True)
class StepDefined:
    """A step as its plan now defines it (after an add, a revision or new dependencies)."""

    plan: PlanSlug
    step: StepDef


@dataclass(frozen=True)
class PlanCreated:
    plan: PlanState
    step_ids: tuple[StepId, ...]  # in the order the steps were given
    keys: tuple[str | None, ...]  # each step's key, as given


@dataclass(frozen=True)
class SessionEnded:
    session_id: SessionId
    released: tuple[StepId, ...]  # the steps it held, each released as its own event


@dataclass(frozen=True)
class ReadyListed:
    """The ready steps a session was shown, as recorded in its stream."""

    plan: PlanSlug
    step_ids: tuple[StepId, ...]
    limit: int | None = None  # what the listing was cut to
    session: SessionId | None = None  # who was shown them: its own reservations bar nothing


# --- commands --------------------------------------------------------------------------


@dataclass(frozen=True)
class StartSession(Command[SessionState]):
    name: ClassVar[str] = "session.start"
    session_name: str | None = None
    actor: str = ""  # a session starts itself: nobody needs to be proven first
    cwd: str | None = None  # where the agent works, as it says
    source: str | None = None  # its client, e.g. "claude-code"
    model: str | None = None
    # The access key the door proved the caller holds, and that key's role (None: the
    # store held no key; ledger.domain.access).
    key: str | None = None
    role: str | None = None


@dataclass(frozen=True)
class EndSession(Command[SessionEnded]):
    """End the session and release every step it holds."""

    name: ClassVar[str] = "session.end"
    actor: str
    findings: str | None = None  # what the agent reports as it stops


@dataclass(frozen=True)
class NewStep:
    """A step to add with a new plan; `depends_on`, `parent` and `discovered_from` name
    `key`s of earlier steps of the request, or existing steps of the plan (an id or a
    reference). The relations are ledger.domain.relations'."""

    title: str
    body: str = ""
    depends_on: tuple[str, ...] = ()
    key: str | None = None
    paths: tuple[PathSpec, ...] = ()  # what it will touch, reserved while it is claimed
    priority: int | None = None  # 0 (highest) .. 4; None: the default (2)
    review_required: bool = False  # its completion waits for a review
    parent: str | None = None  # the step it belongs under (an epic)
    discovered_from: str | None = None  # the step it was found while working on
    labels: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()  # other relations, kept as given
    done: bool = False  # it arrives done (finished work brought over), in the same write
    note: str | None = None  # a handoff note left on it as it is added


@dataclass(frozen=True)
class CreatePlan(Command[PlanCreated]):
    """Create a plan with its constraints and steps, all in one transaction."""

    name: ClassVar[str] = "plan.create"
    slug: str
    title: str
    actor: str
    constraints: tuple[tuple[str, str], ...] = ()
    steps: tuple[NewStep, ...] = ()
    require_checks_pass: bool = False  # completions must report no failed check
    review_required: bool = False  # every completion waits for a review


@dataclass(frozen=True)
class AddStep(Command[StepDefined]):
    name: ClassVar[str] = "step.add"
    plan: str
    title: str
    actor: str
    body: str = ""
    depends_on: tuple[str, ...] = ()
    paths: tuple[PathSpec, ...] = ()  # what it will touch, reserved while it is claimed
    priority: int | None = None  # 0 (highest) .. 4; None: the default (2)
    review_required: bool = False  # its completion waits for a review
    key: str | None = None  # its name within the plan (`plan/key`), unique there
    # Its relations and arrival, as NewStep's (ledger.domain.relations).
    parent: str | None = None
    discovered_from: str | None = None
    labels: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    done: bool = False
    note: str | None = None


@dataclass(frozen=True)
class ReviseStep(Command[StepDefined]):
    name: ClassVar[str] = "step.revise"
    step_id: str
    actor: str
    title: str | None = None
    body: str | None = None
    paths: tuple[PathSpec, ...] | None = None  # all of them, anew (None: as they are)
    priority: int | None = None  # None: as it is


@dataclass(frozen=True)
class DeclareDependencies(Command[StepDefined]):
    name: ClassVar[str] = "step.depend"
    step_id: str
    depends_on: tuple[str, ...]
    actor: str


@dataclass(frozen=True)
class ListReady(Command[ReadyListed]):
    """Record the plan's ready steps as the session is shown them (what it chose from)."""

    name: ClassVar[str] = "ready"
    plan: str
    actor: str
    limit: int | None = None  # shown (and recorded): at most this many, oldest first


@dataclass(frozen=True)
class Claim(Command[Grant]):
    """Claim a ready or lapsed step; the live holder's re-claim is its heartbeat.
    `lease_seconds` None takes the deployment's default."""

    name: ClassVar[str] = "claim"
    step_id: str
    actor: str
    lease_seconds: int | None = None
    paths: tuple[PathSpec, ...] = ()  # reserved beside the step's own (ledger.domain.paths)
    # True: take a step in review to review it (ledger.domain.review), not to work on it.
    review: bool = False


@dataclass(frozen=True)
class Heartbeat(Command[Grant]):
    """Extend the caller's live lease; refused (NotHolder) if it no longer holds."""

    name: ClassVar[str] = "heartbeat"
    step_id: str
    actor: str
    lease_seconds: int | None = None


# The longest a claim-next may wait for a step to become claimable.
MAX_WAIT_SECONDS = 300


@dataclass(frozen=True)
class ClaimNext(Command[NextClaim]):
    """Claim the plan's next ready step in claim order (by priority, then the longest chain
    waiting on it, then age: `claim_handlers.claim_next`), skipping steps lost to a race.
    `wait_seconds`: how long the caller will wait for one when none is claimable
    (0..MAX_WAIT_SECONDS); the handler never waits: the service waits around it
    (api.waiting)."""

    name: ClassVar[str] = "claim_next"
    plan: str
    actor: str
    lease_seconds: int | None = None
    wait_seconds: int = 0
    # True: hand the caller a step in review to review instead (ledger.domain.review), one
    # that is not its own work; two reviewers never get the same one.
    review: bool = False


@dataclass(frozen=True)
class Complete(Command[StepChanged]):
    name: ClassVar[str] = "complete"
    step_id: str
    actor: str
    fence: int | None = None
    note: str | None = None  # a handoff note left with it
    evidence: Evidence | None = None  # what shows the work done (ledger.domain.evidence)
    # True: then claim the plan's next step, as ClaimNext does, in the same call.
    claim_next: bool = False
    lease_seconds: int | None = None  # the next claim's lease (claim_next only)


@dataclass(frozen=True)
class Release(Command[StepChanged]):
    name: ClassVar[str] = "release"
    step_id: str
    actor: str
    fence: int | None = None
    note: str | None = None  # a handoff note left with it, for the next claimer
    # "caller_departed": the server lets go of a grant whose claim-next caller had left
    # before it was told of it (api.waiting); callers themselves release as "released".
    reason: HolderRelease = "released"


@dataclass(frozen=True)
class Drop(Command[StepChanged]):
    """Drop: the holder (a session), or any author while nobody holds the step."""

    name: ClassVar[str] = "drop"
    step_id: str
    actor: str
    fence: int | None = None
    note: str | None = None  # why, for whoever reads the step


@dataclass(frozen=True)
class AddNote(Command[NoteAdded]):
    """A handoff note on a step, by any author, for whoever picks it up next."""

    name: ClassVar[str] = "note"
    step_id: str
    actor: str
    text: str


@dataclass(frozen=True)
class Reopen(Command[StepChanged]):
    name: ClassVar[str] = "reopen"
    step_id: str
    actor: str


@dataclass(frozen=True)
class Review(Command[StepChanged]):
    """A reviewer's verdict on a step in review: "approve" (done) or "reject" (open
    again, the note handed to its next claimer). Four eyes: not by the completion's
    author, nor by another session started with the author's key."""

    name: ClassVar[str] = "review"
    step_id: str
    actor: str
    verdict: str
    note: str | None = None


@dataclass(frozen=True)
class ForceRelease(Command[ForceReleased]):
    """An operator's release of any claim on the step."""

    name: ClassVar[str] = "force_release"
    step_id: str
    actor: str


@dataclass(frozen=True)
class IssueKey(Command[KeyState]):
    """Issue an access key (ledger.domain.access). The command carries only the key's
    digest: the key itself is made and shown by the door, once."""

    name: ClassVar[str] = "key.issue"
    key_name: str
    role: str
    digest: str
    actor: str


@dataclass(frozen=True)
class RevokeKey(Command[KeyState]):
    """Revoke the live access key of this name."""

    name: ClassVar[str] = "key.revoke"
    key_name: str
    actor: str


COMMANDS: tuple[type[Command[Any]], ...] = (
    StartSession, EndSession, CreatePlan, AddStep, ReviseStep, DeclareDependencies,
    ListReady, Claim, Heartbeat, ClaimNext, Complete, Release, Drop, Reopen, ForceRelease,
    AddNote, IssueKey, RevokeKey, Review)
