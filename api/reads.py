"""Ledger and read-model state as API schemas: the one conversion HTTP, MCP, the CLI and
the console all use.

Plan and step views are built inside one `ReadModel.reading()` block, so the steps, their
verdicts and the progress line all describe the same log position and the same moment.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

from planledger.api import plain_answers
from planledger.api.path_reads import with_reserved_paths
from planledger.api.plain_answers import in_order as _in_order
from planledger.api.plain_answers import plan_of as _plan
from planledger.api.runtime import Runtime
from planledger.api.schemas import (
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
)
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.access import OPEN_ROLE
from planledger.ledger.domain.claims import Verdict
from planledger.ledger.domain.ids import KEY_ACTOR_PREFIX, PlanSlug, SessionId, StepId
from planledger.ledger.domain.state import SATISFYING, PlanState, SessionState, StepDef
from planledger.projections import queries
from planledger.projections.timeline import TimelineModel
from planledger.projections.view import LedgerView

MAX_PAGE = plain_answers.MAX_PAGE  # steps or events in one page
check_page = plain_answers.check_page
MAX_TIMELINE_PAGE = 100_000  # entries in one page of /api/timeline
_BASE_FIELDS = {"originator_id", "originator_version", "timestamp", "session_id", "actor"}


def now(runtime: Runtime) -> datetime:
    return runtime.reads.clock.now()  # the ledger's own clock (api.runtime)


# --- plans and steps -------------------------------------------------------------------


def _plan_view(view: LedgerView, plan: PlanState, moment: datetime,
               ) -> tuple[list[StepOut], ProgressOut]:
    verdicts = dict(queries.verdicts(view, plan.slug, moment))
    steps = steps_out(view, moment, plan, [(d, verdicts.get(d.id)) for d in _in_order(view, plan)])
    return steps, queries.progress(view, plan.slug, moment)


def steps_out(view: LedgerView, moment: datetime, plan: PlanState,
              shown: Iterable[tuple[StepDef, Verdict | None]]) -> list[StepOut]:
    """The steps, each judged by its verdict (None: closed), as the plan view shows them:
    with what their live claims reserve and what claimable ones would collide with (the
    fields api.plain_answers makes, here as schemas)."""
    fields = [(d, plain_answers.step_fields(d, view.steps[d.id], verdict, plan.steps,
                                            view.status_of))
              for d, verdict in shown]
    return [StepOut.model_validate(f) for f in plain_answers.annotate(view, moment, fields)]


def plans(runtime: Runtime) -> list[PlanSummaryOut]:
    """Every plan with its progress, oldest first (finished ones retired from the read
    model too)."""
    return [PlanSummaryOut.model_validate(p) for p in plain_answers.plans(runtime)]


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
                   require_checks_pass=state.require_checks_pass,
                   review_required=state.review_required,
                   more=more, next_after=steps[-1].position if steps else after)


def _steps_out(view: LedgerView, plan: PlanState, shown: Sequence[StepDef],
               moment: datetime) -> list[StepOut]:
    """Just these steps as the plan view shows them (each judged at `moment`)."""
    def judged(step_id: StepId) -> Verdict | None:
        closed = view.steps[step_id].status in SATISFYING
        return None if closed else view.verdict(step_id, moment)

    return steps_out(view, moment, plan, [(d, judged(d.id)) for d in shown])


def constraints(runtime: Runtime, slug: str) -> dict[str, str]:
    """The plan's constraints (the rules its steps honour)."""
    return dict(runtime.store.plan(PlanSlug(slug)).constraints)


def ready(runtime: Runtime, slug: str, listed: Sequence[StepId] | None = None,
          limit: int | None = None, asker: SessionId | None = None) -> ReadyOut:
    """The plan's ready steps (or the `listed` ones a session was shown), held and blocked,
    oldest first; with `limit`, at most that many of each, and how many there are. The
    `asker`'s own reservations are no collision for it (a claim of its own never bounces
    off them)."""
    return ReadyOut.model_validate(plain_answers.ready(runtime, slug, listed, limit, asker))


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


def unblocked(runtime: Runtime, step_id: str) -> list[str]:
    """The steps waiting on `step_id` that wait on nothing unfinished now, in plan order;
    through a parent that its completion closed (ledger.domain.relations), the steps
    waiting on that parent too."""
    with runtime.reads.reading() as (view, _):
        found = []
        closing = [StepId(step_id)]
        while closing:
            closed = closing.pop()
            for dependent in view.dependents.get(closed, ()):
                definition, state = view.definition(dependent), view.steps.get(dependent)
                if definition is None or state is None:
                    continue
                if state.status in SATISFYING:
                    if closed in definition.children and state.status == "done":
                        closing.append(dependent)  # a parent it closed: bounded by the plan
                    continue
                if any(view.status_of(d) not in SATISFYING for d in definition.waits_on):
                    continue
                found.append((definition.position, dependent))
    return [s for _, s in sorted(found)]


def nothing_to_review(runtime: Runtime, slug: str) -> str:
    """Why claim-next found no step for the caller to review, as a sentence."""
    p = plan_progress(runtime, slug)
    if not p.in_review:
        return f"nothing to review in plan {slug}: no step is in review"
    return (f"nothing to review in plan {slug}: its {p.in_review} in review are held by "
            "other reviewers, or are your own work (or your key's)")


def step_detail(runtime: Runtime, step_id: str) -> StepDetailOut:
    """A step as the plan view shows it, with every event about it (refused claims too).
    `step_id`: its id or its reference (`plan#N`, `plan/key`)."""
    state, _, _ = runtime.ledger.step(runtime.ledger.resolve_step(step_id))
    shown = next(s for s in plan(runtime, state.plan).steps if s.step_id == state.id)
    entries = runtime.reads.history(state.id)
    return StepDetailOut(**dict(shown),
                         history=[event_out(e.event, e.position) for e in entries])


# --- claims and sessions ---------------------------------------------------------------


def session(runtime: Runtime, session_id: str) -> SessionOut:
    """A session and its live claims, soonest expiry first."""
    state = runtime.store.session(SessionId(session_id))
    holds = [HeldOut(step_id=h.step_id, ref=h.ref, plan=h.plan, title=h.title,
                     fence=h.fence, expires_at=h.expires_at, seconds_left=h.seconds_left,
                     lease_seconds=h.lease_seconds)
             for h in runtime.reads.holdings_of(state.id)]
    holds = with_reserved_paths(runtime, holds)
    return SessionOut(session_id=state.id, name=state.name, started_at=state.started_at,
                      ended=state.ended, holds=holds, cwd=state.cwd, source=state.source,
                      model=state.model, role=state.role or OPEN_ROLE, key=state.key)


# --- the log ---------------------------------------------------------------------------


def event_out(event: Any, position: int | None = None,
              sessions: Mapping[SessionId, SessionState] | None = None) -> EventOut:
    """An event for people and scripts; given the sessions, it names the key behind it."""
    names = [f.name for f in fields(event)] if hasattr(event, "__dataclass_fields__") else []
    data = {n: getattr(event, n) for n in names if n not in _BASE_FIELDS}
    actor = ev.author_of(event) if isinstance(event, ev.LedgerEvent) else None
    return EventOut(position=position, stream=event.originator_id,
                    version=event.originator_version, type=type(event).__name__,
                    at=event.timestamp, session_id=getattr(event, "session_id", None),
                    actor=actor, key=_key_behind(event, actor, sessions or {}), data=data)


def _key_behind(event: Any, actor: str | None,
                sessions: Mapping[SessionId, SessionState]) -> str | None:
    if actor is not None and actor.startswith(KEY_ACTOR_PREFIX):
        return actor.removeprefix(KEY_ACTOR_PREFIX)
    if isinstance(event, ev.SessionStarted):
        return event.key
    session = sessions.get(SessionId(actor or getattr(event, "session_id", None) or ""))
    return None if session is None else session.key


def log_page(runtime: Runtime, after: int = 0, limit: int = 100) -> LogPageOut:
    """Events after log position `after`, at most `limit` (1..1000) of them."""
    if not 1 <= limit <= MAX_PAGE:
        raise errors.InvalidInput("limit", f"{limit} is outside 1..{MAX_PAGE}")
    if after < 0:
        raise errors.InvalidInput("after", "must be 0 or a position from the log")
    with runtime.reads.reading():  # pulled first: the page's sessions are folded
        pass
    found = runtime.store.log_after(after, limit)
    sessions = runtime.reads.sessions
    events = [event_out(event, position, sessions) for position, event in found]
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
