"""The reference model: the log folded by a few lines of independent code, the claim rule
as the README states it, the review gate's four eyes, and what every command should answer.

It shares nothing with the ledger's own folds (`ledger.domain.state`) or read models
(`projections`): it reads the decoded events' fields and keeps its own small states. While
folding it checks what the log must never show (`Reference.violations`): two live holders
of one step, a fence that does not grow by one with each new grant, a renewal or a close by
a session that did not hold the step live at that moment, a close of a closed step, and a
step's events going back in time. Of the review gate (issue 31): a step that requires
review done other than by a reviewer's approval, a verdict or a claim to review by the
work's author (or a session of the author's key), two live reviewers of one step, and a
step claimed while a step it depends on is neither done nor dropped (in review included).
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from planledger.ledger.domain import events as ev

CLOSED = ("done", "dropped")
WORKABLE = ("open", "in_progress")  # neither closed nor in review
Positioned = tuple[int, object]


@dataclass
class RefStep:
    plan: str
    added_at: datetime
    deps: tuple[str, ...]
    review: bool = False  # its completion waits for a review (the plan's or its own)
    status: str = "open"
    holder: str | None = None  # in review: its reviewer
    fence: int = 0
    expires: datetime | None = None
    last_time: datetime | None = None
    author: str | None = None  # in review: the session that submitted the work
    children: tuple[str, ...] = ()  # a parent waits on its children as on dependencies


@dataclass(frozen=True)
class Verdict:
    """A review's verdict as the log holds it."""

    step: str
    reviewer: str
    author: str
    verdict: str
    fence: int


@dataclass
class Reference:
    position: int = 0
    steps: dict[str, RefStep] = field(default_factory=dict)
    plans: dict[str, list[str]] = field(default_factory=dict)  # step ids, oldest first
    sessions: set[str] = field(default_factory=set)
    ended: set[str] = field(default_factory=set)
    keys: dict[str, str] = field(default_factory=dict)  # session -> the key it started with
    verdicts: list[Verdict] = field(default_factory=list)
    grants: dict[tuple[str, int], str] = field(default_factory=dict)  # (step, fence) -> holder
    finished: list[tuple[str, str, int]] = field(default_factory=list)  # (step, by, fence)
    violations: list[str] = field(default_factory=list)
    _defs: dict[str, tuple[datetime, tuple[str, ...], bool]] = field(default_factory=dict)
    _reviewed_plans: set[str] = field(default_factory=set)
    _parents: dict[str, str] = field(default_factory=dict)  # a child's parent

    # --- the claim rule -------------------------------------------------------------

    def live(self, step_id: str, at: datetime) -> str | None:
        step = self.steps[step_id]
        if step.status != "in_progress" or step.holder is None or step.expires is None:
            return None
        if step.holder in self.ended or at >= step.expires:
            return None
        return step.holder

    def reviewer(self, step_id: str, at: datetime) -> str | None:
        """The live reviewer of a step in review at `at`: its review lease runs, its
        session has not ended."""
        step = self.steps[step_id]
        if step.status != "in_review" or step.holder is None or step.expires is None:
            return None
        if step.holder in self.ended or at >= step.expires:
            return None
        return step.holder

    def own_work(self, step_id: str, session: str) -> bool:
        """Four eyes: the session is the step's author, or shares the author's key."""
        author = self.steps[step_id].author
        if author is None:
            return False
        key = self.keys.get(author)
        return session == author or (key is not None and self.keys.get(session) == key)

    def blocked(self, step_id: str) -> bool:
        step = self.steps[step_id]
        return any(self.steps[d].status not in CLOSED for d in (*step.deps, *step.children))

    def ready(self, plan: str, now: datetime) -> list[str]:
        return [s for s in self.plans.get(plan, ()) if self.steps[s].status in WORKABLE
                and self.live(s, now) is None and not self.blocked(s)]

    # --- what commands should answer -------------------------------------------------

    def claim(self, step_id: str, session: str, now: datetime) -> str:
        if session in self.ended:
            return "session_ended"
        step, holder = self.steps[step_id], self.live(step_id, now)
        if step.status in CLOSED:
            return "closed"
        if step.status == "in_review":
            return "in_review"
        if holder is not None:
            return "renewed" if holder == session else "already_claimed"
        return "blocked" if self.blocked(step_id) else "granted"

    def heartbeat(self, step_id: str, session: str, now: datetime) -> str:
        if self.reviewer(step_id, now) == session:
            return "renewed"  # a reviewer's heartbeat renews its review
        if self.live(step_id, now) != session:
            return "session_ended" if session in self.ended else "not_holder"
        return self.claim(step_id, session, now)

    def close(self, action: str, step_id: str, session: str, fence: int | None,
              now: datetime) -> str:
        if session in self.ended:
            return "session_ended"
        step, holder = self.steps[step_id], self.live(step_id, now)
        if step.status == "in_review":
            return "in_review"
        if action == "drop" and holder is None and step.status not in CLOSED and fence is None:
            return "ok"
        if step.status in CLOSED:
            return "closed"
        if fence is not None and fence != step.fence:
            return "stale_fence"
        return "ok" if holder == session else "not_holder"

    def claim_next(self, plan: str, session: str, now: datetime) -> str:
        if session in self.ended:
            return "session_ended"
        ready = self.ready(plan, now)
        if not ready:
            return "nothing"
        return f"granted {min(ready, key=self._levels(plan).__getitem__)}"  # first of equals

    def review_claim(self, step_id: str, session: str, now: datetime) -> str:
        """A claim to review the step (or the reviewer's renewal of it)."""
        refused = self._review_refusal(step_id, session, now)
        if refused is not None:
            return refused
        return "renewed" if self.reviewer(step_id, now) == session else "granted"

    def review(self, step_id: str, session: str, now: datetime) -> str:
        """A verdict: a reviewer need not have claimed the step, but no other may hold it."""
        return self._review_refusal(step_id, session, now) or "ok"

    def _review_refusal(self, step_id: str, session: str, now: datetime) -> str | None:
        if session in self.ended:
            return "session_ended"
        if self.steps[step_id].status != "in_review":
            return "not_in_review"
        if self.own_work(step_id, session):
            return "own_work"
        current = self.reviewer(step_id, now)
        return "already_claimed" if current is not None and current != session else None

    def review_next(self, plan: str, session: str, now: datetime) -> str:
        """Claim-next for a reviewer: the plan's oldest step in review that no reviewer
        holds (the simulator sets no priorities) and that is not the session's own work."""
        if session in self.ended:
            return "session_ended"
        for s in self.plans.get(plan, ()):
            if (self.steps[s].status == "in_review" and self.reviewer(s, now) is None
                    and not self.own_work(s, session)):
                return f"granted {s}"
        return "nothing"

    def _levels(self, plan: str) -> dict[str, int]:
        """Claim-next's key for each step of the plan (the simulator sets no priorities):
        its level negated, the level being 1 + the longest chain of open steps waiting on
        it. The lowest key goes first; among equals, the oldest."""
        steps = self.plans.get(plan, ())
        waiting: dict[str, list[str]] = {s: [] for s in steps}
        for s in steps:
            if self.steps[s].status not in CLOSED:
                for dep in (*self.steps[s].deps, *self.steps[s].children):
                    waiting[dep].append(s)
        levels: dict[str, int] = {}

        def level(s: str) -> int:  # the simulator's plans are a few steps deep
            if s not in levels:
                levels[s] = 1 + max((level(d) for d in waiting[s]), default=0)
            return levels[s]

        return {s: -level(s) for s in steps}

    def end_session(self, session: str) -> str:
        return "session_ended" if session in self.ended else "ok"

    def reopen(self, step_id: str) -> str:
        return "ok" if self.steps[step_id].status in CLOSED else "not_reopenable"

    def held_live(self, session: str, now: datetime) -> list[str]:
        return sorted(s for s in self.steps if self.live(s, now) == session)

    # --- folding the log ---------------------------------------------------------------

    def fold(self, events: list[Positioned]) -> None:
        for position, event in events:
            if position <= self.position:
                continue
            self.position = position
            if isinstance(event, ev.LedgerEvent):
                self._apply(event)

    def _apply(self, event: ev.LedgerEvent) -> None:
        if isinstance(event, ev.SessionStarted):
            self.sessions.add(event.originator_id)
            if event.key is not None:
                self.keys[event.originator_id] = event.key
        elif isinstance(event, ev.SessionEnded):
            self.ended.add(event.originator_id)
        elif isinstance(event, ev.PlanCreated):
            if event.review_required:
                self._reviewed_plans.add(event.slug)
        elif isinstance(event, ev.StepAdded):
            self._defs[event.step_id] = (event.timestamp, tuple(event.depends_on),
                                         bool(event.review_required))
            if event.parent is not None:
                self._parents[event.step_id] = event.parent
        elif isinstance(event, ev.DependenciesDeclared):
            step = self.steps[event.step_id]
            step.deps = step.deps + tuple(d for d in event.depends_on if d not in step.deps)
        elif isinstance(event, ev.StepOpened):
            added_at, deps, review = self._defs[event.originator_id]
            review = review or event.plan in self._reviewed_plans
            self.steps[event.originator_id] = RefStep(event.plan, added_at, deps, review)
            parent = self.steps.get(self._parents.get(event.originator_id, ""))
            if parent is not None:
                parent.children = (*parent.children, event.originator_id)
            order = self.plans.setdefault(event.plan, [])
            order.append(event.originator_id)
            order.sort(key=lambda s: (self.steps[s].added_at, s))
        elif event.originator_id in self.steps:
            self._on_step(self.steps[event.originator_id], event)

    def _on_step(self, step: RefStep, event: ev.LedgerEvent) -> None:
        at, name = event.timestamp, event.originator_id
        if step.last_time is not None and at < step.last_time:
            self._violate(f"step {name}: {type(event).__name__} at {at} goes back in time "
                          f"(its last event was at {step.last_time})")
        step.last_time = at
        holder = self.live(name, at)
        if isinstance(event, ev.StepClaimed):
            self._on_claimed(step, event, holder)
        elif isinstance(event, ev.LeaseRenewed) and step.status == "in_review":
            self._on_review_renewed(step, event)
        elif isinstance(event, ev.LeaseRenewed):
            self._on_renewed(step, event, holder)
        elif isinstance(event, ev.StepReopened):
            if step.status not in CLOSED:
                self._violate(f"step {name}: reopened while {step.status}")
            step.status, step.author = "open", None
        elif isinstance(event, ev.StepCompleted | ev.StepReleased | ev.StepDropped
                        | ev.StepSubmitted):
            self._on_close(step, event, holder)
        elif isinstance(event, ev.ReviewClaimed):
            self._on_review_claimed(step, event)
        elif isinstance(event, ev.StepReviewed):
            self._on_reviewed(step, event)

    def _on_claimed(self, step: RefStep, event: ev.StepClaimed, holder: str | None) -> None:
        at, name = event.timestamp, event.originator_id
        if holder is not None:
            self._violate(f"step {name}: granted to {event.session_id} at {at} while "
                          f"{holder} held it live (until {step.expires})")
        if event.fence != step.fence + 1:
            self._violate(f"step {name}: a grant carried fence {event.fence} after "
                          f"fence {step.fence}")
        if step.status not in WORKABLE:
            self._violate(f"step {name}: granted while {step.status}")
        waited = [f"{d} ({self.steps[d].status})" for d in (*step.deps, *step.children)
                  if self.steps[d].status not in CLOSED]
        if waited:
            self._violate(f"step {name}: granted to {event.session_id} while steps it "
                          f"depends on are neither done nor dropped: {', '.join(waited)}",
                          rule="dependencies")
        self.grants[(name, event.fence)] = event.session_id or ""
        step.status, step.holder, step.fence = "in_progress", event.session_id, event.fence
        step.expires = at + timedelta(seconds=event.lease_seconds)
        if step.expires != event.expires_at:
            self._violate(f"step {name}: the grant's expiry is not its time plus its lease")

    def _on_renewed(self, step: RefStep, event: ev.LeaseRenewed, holder: str | None) -> None:
        name = event.originator_id
        if holder is None or holder != event.session_id or event.fence != step.fence:
            self._violate(f"step {name}: renewed by {event.session_id} (fence "
                          f"{event.fence}) while the live holder was {holder} "
                          f"(fence {step.fence})")
        if step.expires is not None and event.expires_at < step.expires:
            self._violate(f"step {name}: a heartbeat moved its lease's end earlier")
        step.expires = event.expires_at

    # --- the review gate (four eyes) ---------------------------------------------------

    def _on_review_claimed(self, step: RefStep, event: ev.ReviewClaimed) -> None:
        name, at, by = event.originator_id, event.timestamp, event.session_id or ""
        self._four_eyes(step, name, by, "took for review")
        current = self.reviewer(name, at)
        if current is not None:
            self._violate(f"step {name}: taken for review by {by} at {at} while {current} "
                          f"reviewed it live (until {step.expires})", rule="one reviewer")
        if event.fence != step.fence + 1:
            self._violate(f"step {name}: a review grant carried fence {event.fence} after "
                          f"fence {step.fence}")
        if step.status != "in_review":
            self._violate(f"step {name}: taken for review while {step.status}",
                          rule="four eyes")
        self.grants[(name, event.fence)] = by
        step.holder, step.fence = by, event.fence
        step.expires = at + timedelta(seconds=event.lease_seconds)
        if step.expires != event.expires_at:
            self._violate(f"step {name}: the review grant's expiry is not its time plus its "
                          "lease")

    def _on_review_renewed(self, step: RefStep, event: ev.LeaseRenewed) -> None:
        name, current = event.originator_id, self.reviewer(event.originator_id, event.timestamp)
        if current is None or current != event.session_id or event.fence != step.fence:
            self._violate(f"step {name}: review lease renewed by {event.session_id} (fence "
                          f"{event.fence}) while the live reviewer was {current} "
                          f"(fence {step.fence})", rule="one reviewer")
        if step.expires is not None and event.expires_at < step.expires:
            self._violate(f"step {name}: a review renewal moved its lease's end earlier")
        step.expires = event.expires_at

    def _on_reviewed(self, step: RefStep, event: ev.StepReviewed) -> None:
        name, at, by = event.originator_id, event.timestamp, event.session_id or ""
        if step.status != "in_review":
            self._violate(f"step {name}: a verdict ({event.verdict}) by {by} while "
                          f"{step.status}", rule="four eyes")
        self._four_eyes(step, name, by, f"gave the verdict {event.verdict}")
        current = self.reviewer(name, at)
        if current is not None and current != by:
            self._violate(f"step {name}: a verdict by {by} while {current} reviewed it live",
                          rule="one reviewer")
        if event.author != (step.author or "") or event.fence != step.fence:
            self._violate(f"step {name}: a verdict naming author {event.author} (fence "
                          f"{event.fence}); the log's author is {step.author} (fence "
                          f"{step.fence})", rule="four eyes")
        self.verdicts.append(Verdict(name, by, step.author or "", event.verdict, event.fence))
        step.holder, step.expires, step.author = None, None, None
        step.status = "done" if event.verdict == "approve" else "open"

    def _four_eyes(self, step: RefStep, name: str, by: str, did: str) -> None:
        if step.author is not None and self.own_work(name, by):
            how = "its author" if by == step.author else (
                f"a session of its author's key {self.keys.get(by)}")
            self._violate(f"step {name}: {by}, {how}, {did}", rule="four eyes")

    def _on_close(self, step: RefStep, event: ev.LedgerEvent, holder: str | None) -> None:
        name = event.originator_id
        if isinstance(event, ev.StepCompleted) and event.reason is not None:
            self._on_closed_unheld(step, event, holder)
            return
        if step.status not in WORKABLE:
            self._violate(f"step {name}: {type(event).__name__} while {step.status}")
        if isinstance(event, ev.StepCompleted) and step.review:
            self._violate(f"step {name}: done by {event.session_id} without a review, though "
                          "it requires one", rule="four eyes")
        if isinstance(event, ev.StepSubmitted) and not step.review:
            self._violate(f"step {name}: submitted for review, though it requires none",
                          rule="four eyes")
        fence = getattr(event, "fence", None)
        if fence is not None and fence != step.fence:
            self._violate(f"step {name}: closed with fence {fence}, current {step.fence}")
        forced = isinstance(event, ev.StepReleased) and event.reason == "forced"
        unheld_drop = isinstance(event, ev.StepDropped) and event.fence is None
        if unheld_drop and holder is not None:
            self._violate(f"step {name}: dropped without a fence while {holder} held it live")
        if not forced and not unheld_drop and holder != event.session_id:
            self._violate(f"step {name}: {type(event).__name__} by {event.session_id} "
                          f"while the live holder was {holder}")
        step.holder, step.expires = None, None
        if isinstance(event, ev.StepCompleted | ev.StepSubmitted):
            self.finished.append((name, event.session_id or "", step.fence))
        if isinstance(event, ev.StepSubmitted):
            step.status, step.author = "in_review", event.session_id
            return
        step.status = ("done" if isinstance(event, ev.StepCompleted) else
                       "dropped" if isinstance(event, ev.StepDropped) else "open")

    def _on_closed_unheld(self, step: RefStep, event: ev.StepCompleted,
                          holder: str | None) -> None:
        """A step done with no claim: arrived done, or a parent whose last open step it
        waits on (a child or a dependency) closed."""
        name = event.originator_id
        if step.status != "open" or holder is not None:
            self._violate(f"step {name}: closed with no claim while {step.status}, held by "
                          f"{holder}")
        if event.reason == "last_child" and (not step.children or self.blocked(name)):
            self._violate(f"step {name}: closed as a parent while a step it waits on is open")
        step.status = "done"

    def _violate(self, what: str, rule: str = "the claim rule") -> None:
        self.violations.append(f"{rule}: {what}")
