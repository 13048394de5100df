"""The console's snapshot: plans, live sessions and names, built from `api.views`."""

from api import views
from api.console.schemas import ConsoleOut, SessionNameOut
from api.runtime import Runtime
from api.schemas import PlanOut, SessionOut
from api.service import Service
from ledger.domain.ids import SessionId
from ledger.domain.state import SessionState

MAX_IDLE = 12  # idle sessions shown as cards; an agent that never ended stays "live"


def snapshot(service: Service, plan: str | None = None) -> ConsoleOut:
    """The console's state at one log position; `plan` is shown in full even if finished."""
    runtime = service.runtime
    position = runtime.reads.catch_up()  # before reading: a later event is streamed again
    summaries = views.plans(runtime)
    details = [views.plan(runtime, p.slug) for p in summaries
               if p.slug == plan or p.progress.done + p.progress.dropped < p.progress.total
               or p.progress.total == 0]
    sessions, hidden = _live_sessions(runtime)
    return ConsoleOut(now=views.now(runtime), position=position,
                      admin=service.settings.admin_token is not None, plans=summaries,
                      details=details, sessions=sessions, idle_hidden=hidden,
                      names=_names(runtime, details, sessions))


def _live_sessions(runtime: Runtime) -> tuple[list[SessionOut], int]:
    """Sessions holding steps (oldest first), then the newest idle ones; and how many idle
    ones were left out."""
    holding = {h.session_id for h in runtime.reads.holders()}
    with runtime.reads.reading() as (view, _):
        live = [s for s in view.sessions.values() if not s.ended]
    busy = sorted((s for s in live if s.id in holding), key=_started)
    idle = sorted((s for s in live if s.id not in holding), key=_started, reverse=True)
    shown = busy + idle[:MAX_IDLE]
    return [views.session(runtime, s.id) for s in shown], len(idle) - len(idle[:MAX_IDLE])


def _started(session: SessionState) -> tuple[object, str]:
    return session.started_at, session.id


def _names(runtime: Runtime, plans: list[PlanOut], sessions: list[SessionOut],
           ) -> dict[str, SessionNameOut]:
    ids = {s.session_id for s in sessions}
    ids.update(who for p in plans for s in p.steps for who in (s.holder, s.lapsed_holder)
               if who is not None)
    with runtime.reads.reading() as (view, _):
        found = {i: view.sessions.get(SessionId(i)) for i in ids}
    return {i: SessionNameOut(name=s.name, ended=s.ended)
            for i, s in sorted(found.items()) if s is not None}
