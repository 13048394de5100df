"""The console's first read: plans, the first page of each unfinished plan's steps, live
sessions, lapsed claims and names, built from `api.reads` and `api.console.steps`."""

from collections.abc import Iterable

from planledger.api import reads
from planledger.api.console.schemas import ConsoleOut, PlanPageOut, SessionNameOut, StepPageOut
from planledger.api.console.steps import Show, lapsed, page_of
from planledger.api.runtime import Runtime
from planledger.api.schemas import SessionOut, StepOut
from planledger.api.service import Service
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug, SessionId
from planledger.ledger.domain.state import SessionState
from planledger.projections import queries
from planledger.projections.view import LedgerView

MAX_IDLE = 12  # idle sessions shown as cards; an agent that never ended stays "live"


def snapshot(service: Service, plan: str | None = None) -> ConsoleOut:
    """The console's state at one log position; `plan` is shown even if finished."""
    runtime = service.runtime
    with runtime.reads.reading() as (view, moment):
        summaries = reads.plans(runtime)  # the last to catch up: the rest reads `view` as is
        position = view.position
        shown = [p for p in summaries if p.slug == plan or p.progress.done
                 + p.progress.dropped < p.progress.total or p.progress.total == 0]
        details = []
        for summary in shown:
            held = runtime.reads.detail(view, PlanSlug(summary.slug))  # a finished one's too
            page = page_of(held, summary.slug, moment)
            details.append(PlanPageOut(**dict(summary), steps=page.steps,
                                       next_offset=page.next_offset,
                                       constraints=dict(held.plans[PlanSlug(summary.slug)]
                                                        .constraints)))
        loose, loose_hidden = lapsed(view, moment)
        live = live_sessions(view)
    sessions, hidden = _shown_sessions(runtime, live)
    steps = [s for p in details for s in p.steps] + loose
    return ConsoleOut(now=moment, position=position,
                      admin=service.settings.admin_token is not None, plans=summaries,
                      details=details, sessions=sessions, idle_hidden=hidden,
                      live_sessions=len(live), loose=loose, loose_hidden=loose_hidden,
                      names=names(runtime, _named(steps, sessions)))


def steps_page(runtime: Runtime, slug: str, offset: int, limit: int, show: Show,
               text: str) -> StepPageOut:
    """A page of the plan's steps for the console (see `api.console.steps.page_of`)."""
    with runtime.reads.reading() as (view, moment):
        held = runtime.reads.detail(view, PlanSlug(slug))  # a finished one's too
        if PlanSlug(slug) not in held.plans:
            raise errors.UnknownPlan(slug)
        page = page_of(held, slug, moment, offset, limit, show, text)
        progress = (queries.progress(view, PlanSlug(slug), moment))
        position = view.position
    return StepPageOut(now=moment, position=position, plan=slug, progress=progress,
                       offset=offset, steps=page.steps, next_offset=page.next_offset,
                       names=names(runtime, _named(page.steps, [])))


def live_sessions(view: LedgerView) -> list[SessionState]:
    return [s for s in view.sessions.values() if not s.ended]


def _shown_sessions(runtime: Runtime, live: list[SessionState]) -> tuple[list[SessionOut], int]:
    """Sessions holding steps (oldest first), then the newest idle ones; and how many idle
    ones were left out."""
    holding = {h.session_id for h in runtime.reads.holders()}
    busy = sorted((s for s in live if s.id in holding), key=_started)
    idle = sorted((s for s in live if s.id not in holding), key=_started, reverse=True)
    shown = busy + idle[:MAX_IDLE]
    return [reads.session(runtime, s.id) for s in shown], len(idle) - len(idle[:MAX_IDLE])


def _started(session: SessionState) -> tuple[object, str]:
    return session.started_at, session.id


def _named(steps: Iterable[StepOut], sessions: Iterable[SessionOut]) -> set[str]:
    ids = {s.session_id for s in sessions}
    ids.update(who for s in steps for who in (s.holder, s.lapsed_holder) if who is not None)
    return ids


def names(runtime: Runtime, ids: Iterable[str]) -> dict[str, SessionNameOut]:
    """The name of each of these sessions, and whether it ended (unknown ids left out)."""
    with runtime.reads.reading() as (view, _):
        found = {i: view.sessions.get(SessionId(i)) for i in ids}
    return {i: SessionNameOut(name=s.name, ended=s.ended)
            for i, s in sorted(found.items()) if s is not None}
