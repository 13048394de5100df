"""The reference model: the log folded by a few lines of independent code, the claim rule
as the README states it, and what every command should answer.

It shares nothing with the ledger's own folds (`ledger.domain.state`) or read models
(`projections`): it reads the decoded events' fields and keeps its own small states. While
folding it checks what the log must never show (`Reference.violations`): two live holders
of one step, a fence that does not grow by one with each new grant, a renewal or a close by
a session that did not hold the step live at that moment, a close of a closed step, and a
step's events going back in time.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from planledger.ledger.domain import events as ev

CLOSED = ("done", "dropped")
Positioned = tuple[int, object]


@dataclass
class RefStep:
    plan: str
    added_at: datetime
    deps: tuple[str, ...]
    status: str = "open"
    holder: str | None = None
    fence: int = 0
    expires: datetime | None = None
    last_time: datetime | None = None
    children: tuple[str, ...] = ()  # a parent waits on its children as on dependencies


@dataclass
class Reference:
    position: int = 0
    steps: dict[str, RefStep] = field(default_factory=dict)
    plans: dict[str, list[str]] = field(default_factory=dict)  # step ids, oldest first
    sessions: set[str] = field(default_factory=set)
    ended: set[str] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    _defs: dict[str, tuple[datetime, tuple[str, ...]]] = field(default_factory=dict)
    _parents: dict[str, str] = field(default_factory=dict)  # a child's parent

    # --- the claim rule -------------------------------------------------------------

    def live(self, step_id: str, at: datetime) -> str | None:
        step = self.steps[step_id]
        if step.status != "in_progress" or step.holder is None or step.expires is None:
            return None
        if step.holder in self.ended or at >= step.expires:
            return None
        return step.holder

    def blocked(self, step_id: str) -> bool:
        step = self.steps[step_id]
        return any(self.steps[d].status not in CLOSED for d in (*step.deps, *step.children))

    def ready(self, plan: str, now: datetime) -> list[str]:
        return [s for s in self.plans.get(plan, ()) if self.steps[s].status not in CLOSED
                and self.live(s, now) is None and not self.blocked(s)]

    # --- what commands should answer -------------------------------------------------

    def claim(self, step_id: str, session: str, now: datetime) -> str:
        if session in self.ended:
            return "session_ended"
        step, holder = self.steps[step_id], self.live(step_id, now)
        if step.status in CLOSED:
            return "closed"
        if holder is not None:
            return "renewed" if holder == session else "already_claimed"
        return "blocked" if self.blocked(step_id) else "granted"

    def heartbeat(self, step_id: str, session: str, now: datetime) -> str:
        if self.live(step_id, now) != session:
            return "session_ended" if session in self.ended else "not_holder"
        return self.claim(step_id, session, now)

    def close(self, action: str, step_id: str, session: str, fence: int | None,
              now: datetime) -> str:
        if session in self.ended:
            return "session_ended"
        step, holder = self.steps[step_id], self.live(step_id, now)
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
        elif isinstance(event, ev.SessionEnded):
            self.ended.add(event.originator_id)
        elif isinstance(event, ev.StepAdded):
            self._defs[event.step_id] = (event.timestamp, tuple(event.depends_on))
            if event.parent is not None:
                self._parents[event.step_id] = event.parent
        elif isinstance(event, ev.DependenciesDeclared):
            step = self.steps[event.step_id]
            step.deps = step.deps + tuple(d for d in event.depends_on if d not in step.deps)
        elif isinstance(event, ev.StepOpened):
            added_at, deps = self._defs[event.originator_id]
            self.steps[event.originator_id] = RefStep(event.plan, added_at, deps)
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
            if holder is not None:
                self._violate(f"step {name}: granted to {event.session_id} at {at} while "
                              f"{holder} held it live (until {step.expires})")
            if event.fence != step.fence + 1:
                self._violate(f"step {name}: a grant carried fence {event.fence} after "
                              f"fence {step.fence}")
            if step.status in CLOSED:
                self._violate(f"step {name}: granted while {step.status}")
            step.status, step.holder, step.fence = "in_progress", event.session_id, event.fence
            step.expires = at + timedelta(seconds=event.lease_seconds)
            if step.expires != event.expires_at:
                self._violate(f"step {name}: the grant's expiry is not its time plus its lease")
        elif isinstance(event, ev.LeaseRenewed):
            if holder is None or holder != event.session_id or event.fence != step.fence:
                self._violate(f"step {name}: renewed by {event.session_id} (fence "
                              f"{event.fence}) while the live holder was {holder} "
                              f"(fence {step.fence})")
            if step.expires is not None and event.expires_at < step.expires:
                self._violate(f"step {name}: a heartbeat moved its lease's end earlier")
            step.expires = event.expires_at
        elif isinstance(event, ev.StepReopened):
            if step.status not in CLOSED:
                self._violate(f"step {name}: reopened while {step.status}")
            step.status = "open"
        elif isinstance(event, ev.StepCompleted | ev.StepReleased | ev.StepDropped):
            self._on_close(step, event, holder)

    def _on_close(self, step: RefStep, event: ev.LedgerEvent, holder: str | None) -> None:
        name = event.originator_id
        if isinstance(event, ev.StepCompleted) and event.reason is not None:
            self._on_closed_unheld(step, event, holder)
            return
        if step.status in CLOSED:
            self._violate(f"step {name}: {type(event).__name__} while {step.status}")
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
        step.status = ("done" if isinstance(event, ev.StepCompleted) else
                       "dropped" if isinstance(event, ev.StepDropped) else "open")

    def _on_closed_unheld(self, step: RefStep, event: ev.StepCompleted,
                          holder: str | None) -> None:
        """A step done with no claim: arrived done, or a parent whose last child closed."""
        name = event.originator_id
        if step.status != "open" or holder is not None:
            self._violate(f"step {name}: closed with no claim while {step.status}, held by "
                          f"{holder}")
        if event.reason == "last_child" and (not step.children or self.blocked(name)):
            self._violate(f"step {name}: closed as a parent while a child is open")
        step.status = "done"

    def _violate(self, what: str) -> None:
        self.violations.append(what)
