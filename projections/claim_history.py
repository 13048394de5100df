"""Every claim the ledger ever granted, and how long each one lasted.

Auditors use it to check something made outside the ledger, such as a git commit,
against the claim it says it was made under.

A claim is one grant of a step to a session under a fence. It lives from its grant until
the first of these:

- its lease lapses (each heartbeat moves the expiry on);
- its step is released, completed or dropped;
- a newer fence is granted on its step (from then on this claim is stale);
- its session ends.

A claim's paths (PathsReserved, appended with the claim) live exactly as long as the
claim. A reviewer's claim of a step in review (ReviewClaimed) is a claim too, and its
verdict ends it. Completions, and submissions for review, keep the evidence they
reported.

`claim_history` folds the whole log once. That is fine for an auditor's question, which
is not a hot path. The answers are plain values, so the rule that judges commits
(projections.git_audit) needs no store.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PLAN_STREAM_PREFIX
from planledger.ledger.domain.paths import PathSpec

EndReason = str  # "released", "completed", "dropped", "session ended", …


@dataclass(frozen=True)
class Lease:
    """From `since` (a grant or a heartbeat) the claim lives until `expires_at`."""

    since: datetime
    expires_at: datetime


@dataclass
class Claim:
    """One grant of step `step_id` (number `number` in plan `plan`) to `session_id`."""

    step_id: str
    plan: str | None
    number: int | None
    session_id: str
    fence: int
    granted_at: datetime
    position: int
    leases: list[Lease] = field(default_factory=list)
    paths: tuple[PathSpec, ...] = ()
    ended_at: datetime | None = None
    ended_how: EndReason | None = None

    @property
    def ref(self) -> str:
        """`plan#number`, as people name the step (its id when its plan is unknown)."""
        return f"{self.plan}#{self.number}" if self.plan and self.number else self.step_id

    def lease_at(self, moment: datetime) -> Lease | None:
        """The lease in force at `moment`: the last grant or heartbeat at or before it."""
        current = None
        for lease in self.leases:
            if lease.since > moment:
                break
            current = lease
        return current

    def not_live_at(self, moment: datetime, session_ended: datetime | None,
                    ) -> tuple[str, datetime] | None:
        """Why the claim did not hold at `moment`, and since when; None while it held.
        An end at the very moment still holds: a commit named when the step completed."""
        if moment < self.granted_at:
            return "not yet granted", self.granted_at
        if self.ended_at is not None and moment > self.ended_at:
            return self.ended_how or "ended", self.ended_at
        if session_ended is not None and moment > session_ended:
            return "session ended", session_ended
        lease = self.lease_at(moment)
        if lease is not None and moment > lease.expires_at:
            return "lease lapsed", lease.expires_at
        return None


@dataclass(frozen=True)
class Completion:
    """A step done (or submitted for review) by `session_id` under `fence` at `at`,
    naming these commits."""

    step_id: str
    plan: str | None
    number: int | None
    session_id: str | None
    fence: int
    at: datetime
    position: int
    commits: tuple[str, ...]

    @property
    def ref(self) -> str:
        return f"{self.plan}#{self.number}" if self.plan and self.number else self.step_id


@dataclass
class ClaimHistory:
    """Every claim by (step, fence), when each session ended, and every completion."""

    claims: dict[tuple[str, int], Claim] = field(default_factory=dict)
    sessions_ended: dict[str, datetime] = field(default_factory=dict)
    completions: list[Completion] = field(default_factory=list)
    steps: dict[str, tuple[str, int]] = field(default_factory=dict)  # id: (plan, number)

    def claim(self, step_id: str, fence: int) -> Claim | None:
        return self.claims.get((step_id, fence))


_ENDS = (ev.StepReleased | ev.StepCompleted | ev.StepSubmitted | ev.StepReviewed
         | ev.StepDropped)
_HOW = {ev.StepCompleted: "completed", ev.StepSubmitted: "submitted for review",
        ev.StepReviewed: "reviewed", ev.StepDropped: "dropped"}
_RELEASED = {"released": "released", "session_ended": "session ended",
             "forced": "force-released", "caller_departed": "released (its caller left)"}


def claim_history(events: Iterable[tuple[int, object]]) -> ClaimHistory:
    """Fold (position, event) pairs, in log order, into the claims they granted."""
    history = ClaimHistory()
    current: dict[str, Claim] = {}  # step id: its newest claim
    counts: dict[str, int] = {}  # plan: steps added so far
    for position, event in events:
        if not isinstance(event, ev.LedgerEvent):
            continue
        if isinstance(event, ev.StepAdded):
            plan = event.originator_id.removeprefix(PLAN_STREAM_PREFIX)
            counts[plan] = counts.get(plan, 0) + 1
            history.steps.setdefault(event.step_id, (plan, counts[plan]))
        elif isinstance(event, ev.SessionEnded):
            history.sessions_ended.setdefault(event.originator_id, event.timestamp)
        elif isinstance(event, ev.StepClaimed | ev.ReviewClaimed):
            _granted(history, current, position, event)
        elif isinstance(event, ev.LeaseRenewed):
            claim = current.get(event.originator_id)
            if claim is not None and claim.fence == event.fence:
                claim.leases.append(Lease(event.timestamp, event.expires_at))
        elif isinstance(event, ev.PathsReserved):
            claim = history.claim(event.step_id, event.fence)
            if claim is not None:
                claim.paths = tuple(PathSpec(str(p.get("pattern", "")),
                                             "shared" if p.get("mode") == "shared"
                                             else "exclusive") for p in event.paths)
        elif isinstance(event, _ENDS):
            _ended(history, current, position, event)
    return history


def _granted(history: ClaimHistory, current: dict[str, Claim], position: int,
             event: ev.StepClaimed | ev.ReviewClaimed) -> None:
    step = event.originator_id
    before = current.get(step)
    if before is not None and before.ended_at is None:
        before.ended_at, before.ended_how = event.timestamp, "stale fence (granted again)"
    plan, number = history.steps.get(step, (None, None))
    claim = Claim(step, plan, number, event.session_id or "", event.fence, event.timestamp,
                  position, [Lease(event.timestamp, event.expires_at)])
    history.claims[(step, event.fence)] = current[step] = claim


def _ended(history: ClaimHistory, current: dict[str, Claim], position: int,
           event: ev.StepReleased | ev.StepCompleted | ev.StepSubmitted | ev.StepReviewed
           | ev.StepDropped) -> None:
    step = event.originator_id
    claim = current.get(step)
    if claim is not None and claim.ended_at is None and claim.fence == event.fence:
        claim.ended_at = event.timestamp
        claim.ended_how = (_RELEASED.get(event.reason, event.reason)
                           if isinstance(event, ev.StepReleased) else _HOW[type(event)])
    if isinstance(event, ev.StepCompleted | ev.StepSubmitted):
        plan, number = history.steps.get(step, (None, None))
        commits = _commits(event.evidence)
        history.completions.append(Completion(step, plan, number, event.session_id,
                                              event.fence, event.timestamp, position,
                                              commits))


def _commits(evidence: dict[str, object] | None) -> tuple[str, ...]:
    listed = evidence.get("commits") if isinstance(evidence, dict) else None
    if not isinstance(listed, list):
        return ()
    return tuple(c.lower() for c in listed if isinstance(c, str))
