"""A plan's readiness index: which steps sit in which bucket, kept in claim order.

The buckets are what the claim rule (`ledger.domain.claims.assess`) said about each step
when the step or one of its dependencies last changed: `ready` (open and claimable),
`blocked` (open, waiting on dependencies), or the step's status when a verdict on it
depends on the clock (`in_progress`: its lease may lapse at any moment), waits for a
reviewer (`in_review`) or can no longer change (`done`, `dropped`). Moving a step
between buckets costs O(log n) comparisons and one list move, so an event touches only
its step and the steps that depend on it.

Held steps are also kept in order of their leases' expiry, so a query finds the leases
that lapsed by its `now` without judging every step in flight (a plan with 1,000 steps
held judged 1,000 on every `ready`).
"""

from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from planledger.ledger.domain.ids import PlanSlug, StepId

Bucket = Literal["ready", "blocked", "in_progress", "in_review", "done", "dropped"]
BUCKETS: tuple[Bucket, ...] = ("ready", "blocked", "in_progress", "in_review", "done",
                               "dropped")
OrderKey = tuple[int, datetime, StepId]  # priority (0 first), then age, then id


@dataclass
class PlanIndex:
    """One plan's steps by bucket; `order` and `ready` in claim order: by priority (0
    first), then oldest first, ties by id."""

    slug: PlanSlug
    keys: dict[StepId, OrderKey] = field(default_factory=dict)
    order: list[StepId] = field(default_factory=list)
    ready: list[StepId] = field(default_factory=list)
    blocked: set[StepId] = field(default_factory=set)
    in_progress: set[StepId] = field(default_factory=set)
    in_review: set[StepId] = field(default_factory=set)
    bucket: dict[StepId, Bucket] = field(default_factory=dict)
    counts: dict[Bucket, int] = field(default_factory=lambda: dict.fromkeys(BUCKETS, 0))
    expiry: dict[StepId, datetime] = field(default_factory=dict)
    by_expiry: list[tuple[datetime, StepId]] = field(default_factory=list)
    # Steps neither done nor dropped, counted as events arrive (the buckets are judged
    # later): none left, the plan has finished (see LedgerView on retiring plans).
    unclosed: int = 0

    def add(self, step_id: StepId, added_at: datetime, priority: int = 2) -> None:
        """Register a new step in claim order; it has no bucket until it is judged."""
        if step_id in self.keys:
            return
        key = (priority, added_at, step_id)
        self.keys[step_id] = key
        if not self.order or self.keys[self.order[-1]] <= key:
            self.order.append(step_id)  # the usual case: steps arrive oldest first
        else:
            insort(self.order, step_id, key=self.keys.__getitem__)

    def place(self, step_id: StepId, bucket: Bucket) -> None:
        """Move the step into `bucket` (a no-op when it is there already)."""
        old = self.bucket.get(step_id)
        if old == bucket:
            return
        if old is not None:
            self._leave(step_id, old)
            self.counts[old] -= 1
        self.bucket[step_id] = bucket
        self.counts[bucket] += 1
        if bucket == "ready":
            insort(self.ready, step_id, key=self.keys.__getitem__)
        elif bucket == "blocked":
            self.blocked.add(step_id)
        elif bucket == "in_progress":
            self.in_progress.add(step_id)
        elif bucket == "in_review":
            self.in_review.add(step_id)

    def _leave(self, step_id: StepId, bucket: Bucket) -> None:
        if bucket == "ready":
            at = bisect_left(self.ready, self.keys[step_id], key=self.keys.__getitem__)
            del self.ready[at]
        elif bucket == "blocked":
            self.blocked.discard(step_id)
        elif bucket == "in_progress":
            self.in_progress.discard(step_id)
        elif bucket == "in_review":
            self.in_review.discard(step_id)

    def reprioritize(self, step_id: StepId, priority: int) -> None:
        """Move the step to its new place in claim order (and in the ready list)."""
        old = self.keys.get(step_id)
        if old is None or old[0] == priority:
            return
        ready = self.bucket.get(step_id) == "ready"
        del self.order[bisect_left(self.order, old, key=self.keys.__getitem__)]
        if ready:
            del self.ready[bisect_left(self.ready, old, key=self.keys.__getitem__)]
        self.keys[step_id] = (priority, old[1], step_id)
        insort(self.order, step_id, key=self.keys.__getitem__)
        if ready:
            insort(self.ready, step_id, key=self.keys.__getitem__)

    def in_order(self, step_ids: set[StepId] | list[StepId]) -> list[StepId]:
        """The given steps of this plan in claim order."""
        return sorted(step_ids, key=self.keys.__getitem__)

    def hold_until(self, step_id: StepId, expires_at: datetime | None) -> None:
        """Note when the step's lease ends (None: no lease holds it any more)."""
        old = self.expiry.pop(step_id, None)
        if old is not None:
            del self.by_expiry[bisect_left(self.by_expiry, (old, step_id))]
        if expires_at is not None:
            self.expiry[step_id] = expires_at
            insort(self.by_expiry, (expires_at, step_id))  # a heartbeat's: near the end

    def lapsed_by(self, now: datetime) -> list[StepId]:
        """Held steps whose lease ends at or before `now` (the claim rule's lapse)."""
        end = bisect_right(self.by_expiry, now, key=_expiry_of)
        return [step_id for _, step_id in self.by_expiry[:end]]

    def next_expiry(self, now: datetime) -> datetime | None:
        """When the first lease still live at `now` ends (None: none is)."""
        at = bisect_right(self.by_expiry, now, key=_expiry_of)
        return self.by_expiry[at][0] if at < len(self.by_expiry) else None


def _expiry_of(entry: tuple[datetime, StepId]) -> datetime:
    return entry[0]
