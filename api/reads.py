"""Ledger and read-model state as API schemas: the one conversion HTTP, MCP, the CLI and
the console all use.

Plan and step views are built inside one `ReadModel.reading()` block, so the steps, their
verdicts and the progress line all describe the same log position and the same moment.
"""

from collections.abc import Iterable, Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

from planledger.api.path_reads import annotated, free_first, with_reserved_paths
from planledger.api.runtime import Runtime
from planledger.api.schemas import (
    BlockerOut,
    EventOut,
    HeldOut,
    LogPageOut,
    NothingReady,
    PlanOut,
    PlanSummaryOut,
    ProgressOut,
    ReadyOut,
    SessionOut,
    StepDetailOut,
    StepOut,
    TimelineOut,
    paths_out,
)
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.claims import Verdict
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.state import SATISFYING, PlanState, StepDef, StepState
from planledger.projections import queries
from planledger.projections.timeline import TimelineModel
from planledger.projections.view import LedgerView

MAX_PAGE = 1000
MAX_TIMELINE_PAGE = 100_000  # entries in one page of /api/timeline
_BASE_FIELDS = {"originator_id", "originator_version", "timestamp", "session_id", "actor"}


def now(runtime: Runtime) -> datetime:
    return runtime.ledger.clock.now()


# --- plans and steps -------------------------------------------------------------------


def _plan(view: LedgerView, slug: str) -> PlanState:
    plan = view.plans.get(PlanSlug(slug))
    if plan is None:
        raise errors.UnknownPlan(slug[:100])
    return plan


def _plan_view(view: LedgerView, plan: PlanState, moment: datetime,
               ) -> tuple[list[StepOut], ProgressOut]:
    verdicts = dict(queries.verdicts(view, plan.slug, moment))
    steps = [step_out(d, view.steps[d.id], verdicts.get(d.id), plan.steps)
             for d in _in_order(view, plan)]
    return annotated(view, moment, steps), (queries.progress(view, plan.slug, moment))


def _in_order(view: LedgerView, plan: PlanState) -> list[StepDef]:
    """The plan's steps the view holds, oldest first (their `position` grows with it)."""
    return [d for d in sorted(plan.steps.values(), key=lambda d: (d.added_at, d.id))
            if d.id in view.steps]


def step_out(
    definition: StepDef, state: StepState, verdict: Verdict | None,
    definitions: dict[StepId, StepDef],
) -> StepOut:
    kind = verdict.kind if verdict else "closed"
    holder = verdict.holder if verdict and kind == "held" else None
    return StepOut(
        step_id=definition.id, plan=state.plan, position=definition.position,
        title=definition.title, priority=definition.priority, body=definition.body,
        depends_on=list(definition.depends_on),
        # A step claimable after a lapse reads as open: its lease no longer holds it.
        status="open" if kind == "claimable" else state.status,
        claimable=kind == "claimable", holder=holder,
        lapsed_holder=verdict.holder if verdict and kind == "claimable" else None,
        fence=state.fence, expires_at=state.expires_at if holder else None,
        blockers=[BlockerOut(step_id=b, title=_title(definitions, b), status=s)
                  for b, s in (verdict.blockers if verdict else ())],
        paths=paths_out(definition.paths),
    )


def _title(definitions: dict[StepId, StepDef], step_id: StepId) -> str:
    found = definitions.get(step_id)
    return found.title if found else ""


def plans(runtime: Runtime) -> list[PlanSummaryOut]:
    """Every plan with its progress, oldest first (finished ones retired from the read
    model too)."""
    with runtime.reads.reading() as (view, moment):
        held = [(p.created_at, p.slug, p.title) for p in view.plans.values()]
        retired = [(f.created_at, f.slug, f.title) for f in view.finished.values()]
        return [PlanSummaryOut(slug=slug, title=title, created_at=created,
                               progress=(queries.progress(view, slug, moment)))
                for created, slug, title in sorted(held + retired)]


def plan(runtime: Runtime, slug: str, limit: int | None = None, after: int = -1) -> PlanOut:
    """The plan with its steps, oldest first; with `limit`, a page of at most that many
    steps whose `position` is past `after`, and how many more follow."""
    with runtime.reads.reading() as (live, moment):
        view = runtime.reads.detail(live, PlanSlug(slug))  # read back if it retired
        state = _plan(view, slug)
        if limit is None:
            steps, progress = _plan_view(view, state, moment)
            more = 0
        else:
            check_page(limit)
            rest = [d for d in _in_order(view, state) if d.position > after]
            steps = _steps_out(view, state, rest[:limit], moment)
            progress, more = queries.progress(view, state.slug, moment), len(rest[limit:])
    return PlanOut(slug=state.slug, title=state.title, created_at=state.created_at,
                   progress=progress, constraints=dict(state.constraints), steps=steps,
                   more=more, next_after=steps[-1].position if steps else after)


def check_page(limit: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise errors.InvalidInput("limit", f"{limit} is outside 1..{MAX_PAGE}")


def _steps_out(view: LedgerView, plan: PlanState, shown: Sequence[StepDef],
               moment: datetime) -> list[StepOut]:
    """Just these steps as the plan view shows them (each judged at `moment`)."""
    def judged(step_id: StepId) -> Verdict | None:
        closed = view.steps[step_id].status in SATISFYING
        return None if closed else view.verdict(step_id, moment)

    return annotated(view, moment, [step_out(d, view.steps[d.id], judged(d.id), plan.steps)
                                    for d in shown])


def constraints(runtime: Runtime, slug: str) -> dict[str, str]:
    """The plan's constraints (the rules its steps honour)."""
    return dict(runtime.store.plan(PlanSlug(slug)).constraints)


def ready(runtime: Runtime, slug: str, listed: Sequence[StepId] | None = None,
          limit: int | None = None, asker: SessionId | None = None) -> ReadyOut:
    """The plan's ready steps (or the `listed` ones a session was shown), held and blocked,
    oldest first; with `limit`, at most that many of each, and how many there are. The
    `asker`'s own reservations are no collision for it (a claim of its own never bounces
    off them)."""
    if limit is not None:
        check_page(limit)
    with runtime.reads.reading() as (live, moment):
        view = runtime.reads.detail(live, PlanSlug(slug))
        state = _plan(view, slug)
        judged = dict(queries.verdicts(view, state.slug, moment))
        order = _in_order(view, state)
        kinds: dict[str, list[StepDef]] = {"claimable": [], "held": [], "blocked": []}
        for d in order:
            verdict = judged.get(d.id)
            if verdict is not None and verdict.kind in kinds:
                kinds[verdict.kind].append(d)
        kinds["claimable"].sort(key=lambda d: (d.priority, d.added_at, d.id))  # claim order
        totals = {k: len(v) for k, v in kinds.items()}
        if listed is not None:
            known = {d.id: d for d in order}
            kinds["claimable"] = [known[s] for s in listed if s in known]
        kinds["claimable"] = free_first(view, moment, kinds["claimable"], asker)
        cut = {k: v[:limit] if limit is not None else v for k, v in kinds.items()}

        def out(ds: list[StepDef]) -> list[StepOut]:
            return annotated(view, moment, [step_out(d, view.steps[d.id], judged.get(d.id),
                                                     state.steps) for d in ds], asker)

        line = queries.progress(view, state.slug, moment).line
    return ReadyOut(plan=slug, ready=out(cut["claimable"]), held=out(cut["held"]),
                    blocked=out(cut["blocked"]), progress=line,
                    ready_total=totals["claimable"], held_total=totals["held"],
                    blocked_total=totals["blocked"])


def plan_progress(runtime: Runtime, slug: str) -> ProgressOut:
    """The plan's progress now (its counts and line)."""
    with runtime.reads.reading() as (view, moment):
        if not view.knows(PlanSlug(slug)):
            raise errors.UnknownPlan(slug[:100])
        return queries.progress(view, PlanSlug(slug), moment)


def nothing_ready(runtime: Runtime, slug: str) -> tuple[NothingReady, str]:
    """Why a plan has no step to claim, as a reason code and a sentence."""
    p = plan_progress(runtime, slug)
    live = p.total - p.done - p.dropped
    if p.total == 0:
        return "empty", f"plan {slug} has no steps"
    counts = f"{p.in_flight} held, {p.blocked} blocked, {p.done + p.dropped} done or dropped"
    if live == 0:
        return "all_done", f"nothing to claim in plan {slug}: every step is done or dropped"
    reason: NothingReady = ("all_held" if p.in_flight == live else
                            "all_blocked" if p.blocked == live else "none_ready")
    return reason, f"nothing ready in plan {slug}: {counts}"


def step_detail(runtime: Runtime, step_id: str) -> StepDetailOut:
    """A step as the plan view shows it, with every event about it (refused claims too)."""
    state, _, _ = runtime.ledger.step(step_id)
    shown = next(s for s in plan(runtime, state.plan).steps if s.step_id == state.id)
    entries = runtime.reads.history(state.id)
    return StepDetailOut(**dict(shown),
                         history=[event_out(e.event, e.position) for e in entries])


# --- claims and sessions ---------------------------------------------------------------


def session(runtime: Runtime, session_id: str) -> SessionOut:
    """A session and its live claims, soonest expiry first."""
    state = runtime.store.session(SessionId(session_id))
    holds = [HeldOut(step_id=h.step_id, plan=h.plan, title=h.title, fence=h.fence,
                     expires_at=h.expires_at, seconds_left=h.seconds_left,
                     lease_seconds=h.lease_seconds)
             for h in runtime.reads.holdings_of(state.id)]
    holds = with_reserved_paths(runtime, holds)
    return SessionOut(session_id=state.id, name=state.name, started_at=state.started_at,
                      ended=state.ended, holds=holds, cwd=state.cwd, source=state.source,
                      model=state.model)


# --- the log ---------------------------------------------------------------------------


def event_out(event: Any, position: int | None = None) -> EventOut:
    names = [f.name for f in fields(event)] if hasattr(event, "__dataclass_fields__") else []
    data = {n: getattr(event, n) for n in names if n not in _BASE_FIELDS}
    return EventOut(position=position, stream=event.originator_id,
                    version=event.originator_version, type=type(event).__name__,
                    at=event.timestamp, session_id=getattr(event, "session_id", None),
                    actor=ev.author_of(event) if isinstance(event, ev.LedgerEvent) else None,
                    data=data)


def log_page(runtime: Runtime, after: int = 0, limit: int = 100) -> LogPageOut:
    """Events after log position `after`, at most `limit` (1..1000) of them."""
    if not 1 <= limit <= MAX_PAGE:
        raise errors.InvalidInput("limit", f"{limit} is outside 1..{MAX_PAGE}")
    if after < 0:
        raise errors.InvalidInput("after", "must be 0 or a position from the log")
    found = runtime.store.log_after(after, limit)
    events = [event_out(event, position) for position, event in found]
    return LogPageOut(after=after, next_after=found[-1][0] if found else after,
                      more=len(found) == limit, events=events)


def timeline(model: TimelineModel, plan: str | None = None, sessions: Sequence[str] = (),
             since: datetime | None = None, until: datetime | None = None,
             after: int = 0, limit: int | None = None) -> TimelineOut:
    """The merged timeline of a plan, some sessions, or everything (projections.timeline),
    after log position `after`, at most `limit` entries."""
    found = model.timeline(plan, tuple(sessions), since, until, after, limit)
    if plan is not None and not found.progress:  # a plan the log has never seen
        raise errors.UnknownPlan(plan[:100])
    return TimelineOut(
        lanes=list(found.lanes), entries=list(found.entries), more=found.more,
        next_after=found.next_after,
        progress=list(found.progress))


def events_out(events: Iterable[Any]) -> list[EventOut]:
    return [event_out(e) for e in events]
