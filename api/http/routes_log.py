"""The event log (paged by position), the merged timeline, and health and metrics."""

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import AwareDatetime
from starlette.concurrency import run_in_threadpool

from planledger.api import reads
from planledger.api.http.deps import ServiceDep
from planledger.api.http.docs import errors
from planledger.api.metrics import CONTENT_TYPE
from planledger.api.schemas import HealthOut, LogPageOut, TimelineOut
from planledger.ledger.storage import MEMORY, is_postgres

router = APIRouter(tags=["log"])
ops = APIRouter(tags=["operations"])

MAX_POSITION = 2**62


@router.get("/api/log", response_model=LogPageOut, responses=errors())
async def log(service: ServiceDep,
              after: Annotated[int, Query(ge=0, le=MAX_POSITION,
                                          description="Return events after this position.")] = 0,
              limit: Annotated[int, Query(ge=1, le=reads.MAX_PAGE)] = 100) -> LogPageOut:
    """Every event in the order it was appended, after log position `after`; follow
    `next_after` while `more` is true. Refused attempts (bounces, stale fences) are here
    too, in the acting session's stream."""
    return await run_in_threadpool(lambda: reads.log_page(service.runtime, after, limit))


@ops.get("/healthz", response_model=HealthOut, responses=errors(e503="The store is "
                                                                    "unreachable."))
def healthz(service: ServiceDep) -> HealthOut:
    """The server is up and its store answers; `position` is the log's latest position."""
    db = service.runtime.db
    kind = "memory" if db == MEMORY else "postgresql" if is_postgres(db) else "sqlite"
    return HealthOut(status="ok", store=kind,
                     position=service.runtime.store.log_end())


@ops.get("/metrics", response_class=Response,
         responses={200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus text"}})
def metrics(service: ServiceDep) -> Response:
    """Prometheus metrics: planledger_claims_total, planledger_bounces_total{reason},
    planledger_lapses_total, planledger_releases_total{reason},
    planledger_completions_total, planledger_request_seconds,
    planledger_requests_in_flight."""
    return Response(service.metrics.exposition(), media_type=CONTENT_TYPE)


@router.get("/api/timeline", response_model=TimelineOut, responses=errors(404))
async def timeline(
    service: ServiceDep,
    plan: Annotated[str | None, Query(pattern=r"^[a-z0-9-]{1,64}$",
                                      description="One plan's entries.")] = None,
    session: Annotated[list[str] | None, Query(description="Only these sessions' lanes.",
                                               max_length=100)] = None,
    since: AwareDatetime | None = None, until: AwareDatetime | None = None,
    after: Annotated[int, Query(ge=0, le=MAX_POSITION, description="Only entries after this "
                                "log position (a reader holding a page asks for what came "
                                "since: `next_after`).")] = 0,
    limit: Annotated[int | None, Query(ge=1, le=reads.MAX_TIMELINE_PAGE, description="At "
                                       "most this many entries (default: all).")] = None,
) -> TimelineOut:
    """The merged timeline: one clock, a lane per session, entries in log order (the order
    that decided every race); a bounce reads `task already claimed: held by "<session>"`.
    A page of a plan's timeline also carries the start of each session whose first act on
    the plan is on the page: merged by position, pages add up to the whole timeline."""
    return await run_in_threadpool(lambda: reads.timeline(
        service.timelines, plan, session or (), since, until, after, limit))
