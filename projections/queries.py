"""Queries over a `LedgerView` at a moment: ready, blocked, holders, progress, verdicts.

The index already holds the open steps' verdicts; only in-progress steps whose claim may
have lapsed by the caller's `now` are judged here, with the claim rule, because a lease
lapses with the clock and writes nothing (the index keeps leases in expiry order, so
finding them is a bisection). So a query costs what it returns plus the lapsed claims,
never the size of the plan, of its steps in flight, or of the log.
"""

import heapq
from datetime import datetime

from planledger.ledger.domain import errors
from planledger.ledger.domain.claims import Verdict, live_holder, reviewer
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.references import step_reference
from planledger.projections.index import PlanIndex
from planledger.projections.results import (
    BlockedStep,
    Blocker,
    Holding,
    Progress,
    ReadyStep,
    ReviewStep,
)
from planledger.projections.view import LedgerView


def _index(view: LedgerView, plan: PlanSlug) -> PlanIndex:
    index = view.indexes.get(plan)
    if index is None:
        if plan in view.finished:  # retired: nothing ready, blocked or held
            return PlanIndex(plan)
        raise errors.UnknownPlan(plan)
    return index


def _maybe_lapsed(view: LedgerView, index: PlanIndex, now: datetime) -> list[StepId]:
    """The plan's steps in progress whose claim may have lapsed by `now` (lease at or past
    expiry, or holder's session ended); every other one is held, by the claim rule,
    whatever its dependencies say."""
    found = set(index.lapsed_by(now))
    for session_id in view.ended_holders:
        found.update(view.held.get(session_id, ()))
    return [s for s in found if index.bucket.get(s) == "in_progress"]


def _judged_lapsed(
    view: LedgerView, index: PlanIndex, now: datetime
) -> list[tuple[StepId, Verdict]]:
    """Verdicts on the steps in progress whose claim may have lapsed; the rest are held."""
    return [(step_id, view.verdict(step_id, now)) for step_id in _maybe_lapsed(view, index, now)]


def ready_ids(view: LedgerView, plan: PlanSlug, now: datetime) -> list[StepId]:
    """The plan's claimable steps at `now`: by priority (0 first), then oldest first, ties
    by id."""
    index = _index(view, plan)
    lapsed = [s for s, v in _judged_lapsed(view, index, now) if v.kind == "claimable"]
    if not lapsed:
        return list(index.ready)
    key = index.keys.__getitem__
    return list(heapq.merge(index.ready, index.in_order(lapsed), key=key))


def claim_order(view: LedgerView, plan: PlanSlug, now: datetime) -> list[StepId]:
    """The plan's claimable steps at `now` in the order claim-next tries them: by priority
    (0 first), then heading the longest chain of open steps waiting on them (the highest
    `LedgerView.levels`: critical path first), then oldest first, ties by id. Levels are
    kept per plan, so this costs a lookup a ready step (and a sort when levels differ),
    not the plan's size."""
    ready = ready_ids(view, plan, now)
    if len(ready) < 2:
        return ready
    levels = view.levels(plan, ready)
    if min(levels) == max(levels):
        return ready  # already by priority, then age, then id
    keys = _index(view, plan).keys
    priorities = [keys[s][0] for s in ready]
    # `ready` is in (priority, age, id) order: its position breaks ties between levels.
    negated = [-level for level in levels]
    ranked = sorted(zip(priorities, negated, range(len(ready)), strict=True))
    return [ready[at] for _, _, at in ranked]


def next_lapse(view: LedgerView, plan: PlanSlug, now: datetime) -> datetime | None:
    """When the plan's next live lease ends, making its step claimable unless renewed
    (None: no lease of the plan is live at `now`). A lapse writes nothing to the log, so
    whoever waits for a step times its wait to this."""
    return _index(view, plan).next_expiry(now)


def ready_steps(view: LedgerView, plan: PlanSlug | None, now: datetime) -> list[ReadyStep]:
    """Claimable steps of one plan (by priority, then oldest first, ties by id) or of every
    plan (oldest first, ties by id); a step claimable because its claim lapsed names the
    lapsed holder."""
    plans = [plan] if plan is not None else list(view.indexes)
    found = [_ready_step(view, step_id, now) for p in plans for step_id in ready_ids(view, p, now)]
    if plan is None:
        found.sort(key=lambda r: (r.added_at, r.step_id))
    return found


def _ready_step(view: LedgerView, step_id: StepId, now: datetime) -> ReadyStep:
    step = view.steps[step_id]
    definition = view.definition(step_id)
    assert definition is not None
    lapsed = step.holder if step.status == "in_progress" else None
    session = view.sessions.get(lapsed) if lapsed is not None else None
    return ReadyStep(step_id, step.plan, definition.title, definition.position,
                     definition.added_at, lapsed, session.name if session else None)


def review_steps(view: LedgerView, plan: PlanSlug | None, now: datetime,
                 free_only: bool = False) -> list[ReviewStep]:
    """Steps waiting for a review (of one plan, or of all), by priority then age; with
    `free_only`, only those no reviewer holds at `now` (what claim-next may hand out)."""
    found = []
    for slug in [plan] if plan is not None else list(view.indexes):
        index = _index(view, slug)
        for step_id in index.in_order(index.in_review):
            waiting = _review_step(view, step_id, now)
            if not (free_only and waiting.reviewer is not None):
                found.append(waiting)
    if plan is None:
        found.sort(key=lambda r: (r.added_at, r.step_id))
    return found


def _review_step(view: LedgerView, step_id: StepId, now: datetime) -> ReviewStep:
    step = view.steps[step_id]
    definition = view.definition(step_id)
    assert definition is not None
    current = reviewer(step, now, view.holder_ended(step))

    def name(session_id: SessionId | None) -> str | None:
        session = view.sessions.get(session_id) if session_id is not None else None
        return session.name if session is not None else None

    return ReviewStep(step_id, step.plan, definition.title, definition.position,
                      definition.added_at, step.author, name(step.author), current,
                      name(current))


def blocked_steps(
    view: LedgerView, plan: PlanSlug | None, now: datetime
) -> list[BlockedStep]:
    """Steps a claim would refuse as blocked (of one plan, or of all), oldest first, each
    with what blocks it."""
    found = []
    for slug in [plan] if plan is not None else list(view.indexes):
        index = _index(view, slug)
        for step_id in index.in_order([*index.blocked, *_maybe_lapsed(view, index, now)]):
            verdict = view.verdict(step_id, now)
            if verdict.kind == "blocked":
                found.append(_blocked_step(view, step_id, verdict))
    if plan is None:
        found.sort(key=lambda b: (b.added_at, b.step_id))
    return found


def _blocked_step(view: LedgerView, step_id: StepId, verdict: Verdict) -> BlockedStep:
    definition = view.definition(step_id)
    assert definition is not None
    blockers = []
    for dep, status in verdict.blockers:
        dep_definition = view.definition(dep)
        blockers.append(Blocker(dep, dep_definition.title if dep_definition else "", status))
    return BlockedStep(step_id, view.steps[step_id].plan, definition.title,
                       definition.position, definition.added_at, tuple(blockers))


def verdicts(view: LedgerView, plan: PlanSlug, now: datetime) -> list[tuple[StepId, Verdict]]:
    """Every open, in-progress or in-review step of the plan with what a claim would meet, oldest
    first, ties by id (the whole plan: for consoles and audits, not for hot paths)."""
    index = _index(view, plan)
    return [(step_id, view.verdict(step_id, now)) for step_id in index.order
            if index.bucket.get(step_id) in ("ready", "blocked", "in_progress", "in_review")]


def holdings(
    view: LedgerView, now: datetime, session: SessionId | None = None,
    plan: PlanSlug | None = None,
) -> list[Holding]:
    """Live claims (of one session, or one plan, or all), soonest expiry first."""
    if session is not None:
        candidates = list(view.held.get(session, ()))
    else:
        plans = [plan] if plan is not None else list(view.indexes)
        candidates = [s for p in plans for s in _index(view, p).in_progress]
    found = [h for step_id in candidates if (h := holding(view, step_id, now)) is not None]
    found.sort(key=lambda h: (h.expires_at, h.step_id))
    return found


def holding(view: LedgerView, step_id: StepId, now: datetime) -> Holding | None:
    """The live claim on the step at `now`, if any."""
    step = view.steps[step_id]
    holder = live_holder(step, now, view.holder_ended(step))
    if holder is None or step.expires_at is None:
        return None
    definition = view.definition(step_id)
    session = view.sessions.get(holder)
    return Holding(step_id, step.plan, definition.title if definition else "", holder,
                   session.name if session else None, step.fence, step.lease_seconds,
                   step.expires_at, (step.expires_at - now).total_seconds(),
                   step_reference(step.plan, definition.position) if definition else None)


def progress(view: LedgerView, plan: PlanSlug, now: datetime) -> Progress:
    """The plan's counts at `now`: in-progress steps are split by what the clock says."""
    finished = view.finished.get(plan)
    if finished is not None:
        return Progress.of(plan, finished.title, total=finished.total, done=finished.done,
                           dropped=finished.dropped, in_flight=0, claimable=0, blocked=0)
    index = _index(view, plan)
    kinds = [verdict.kind for _, verdict in _judged_lapsed(view, index, now)]
    state = view.plans[plan]
    return Progress.of(
        plan, state.title, total=len(index.order),
        done=index.counts["done"], dropped=index.counts["dropped"],
        in_flight=index.counts["in_progress"] - len(kinds) + kinds.count("held"),
        claimable=index.counts["ready"] + kinds.count("claimable"),
        blocked=index.counts["blocked"] + kinds.count("blocked"),
        in_review=index.counts["in_review"],
    )


def progress_as_of_last(view: LedgerView, plans: list[str]) -> tuple[Progress, ...]:
    """Each known plan's progress as of the view's last event (a timeline's reckoning)."""
    view.settle()
    now = view.last_time
    if now is None:
        return ()
    return tuple(progress(view, PlanSlug(p), now) for p in plans if view.knows(PlanSlug(p)))
