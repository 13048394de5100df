"""Plans: create one with its steps and constraints, list, show progress, ready steps,
add steps, and claim the next ready step."""

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from planledger.api import reads
from planledger.api.http.departure import CLIENT_CLOSED_REQUEST, CallerLeft, unless_caller_leaves
from planledger.api.http.deps import (
    ActorDep,
    AuthorDep,
    IdempotencyKeyDep,
    ServiceDep,
    SlugPath,
)
from planledger.api.http.docs import errors
from planledger.api.reads import MAX_PAGE
from planledger.api.schemas import (
    ClaimNextIn,
    ClaimNextOut,
    PlanCreatedOut,
    PlanIn,
    PlanOut,
    PlanSummaryOut,
    ReadyOut,
    StepIn,
    StepOut,
    StepRefOut,
)
from planledger.ledger import commands as c

router = APIRouter(prefix="/api/plans", tags=["plans"])
LimitQuery = Annotated[int | None, Query(ge=1, le=MAX_PAGE, description="At most this many "
                                         "steps of each kind.")]


@router.post("", status_code=201, response_model=PlanCreatedOut,
             responses=errors(401, e409="plan_exists: the slug is taken.",
                              e422="Bad slug, title, constraint, or a dependency that is "
                                   "unknown, on itself, or closes a cycle."))
async def plan_create(service: ServiceDep, plan: PlanIn, actor: AuthorDep,
                      key: IdempotencyKeyDep = None) -> PlanCreatedOut:
    """Create a plan with its constraints and steps in one transaction. Steps name earlier
    steps of the same request by `key` in `depends_on`. Needs a session token or the admin
    token: the events name who created the plan."""
    return await run_in_threadpool(lambda: service.answer(plan.command(actor), PlanCreatedOut, key))


@router.get("", response_model=list[PlanSummaryOut], responses=errors())
async def plan_list(service: ServiceDep) -> list[PlanSummaryOut]:
    """Every plan with its progress line, oldest first."""
    return await run_in_threadpool(lambda: reads.plans(service.runtime))


@router.get("/{slug}", response_model=PlanOut, responses=errors(404))
async def plan_show(service: ServiceDep, slug: SlugPath) -> PlanOut:
    """A plan: constraints, progress ("4/6 done, 1 claimable, 0 in flight") and every step
    with its status, holder and blockers."""
    return await run_in_threadpool(lambda: reads.plan(service.runtime, slug))


@router.get("/{slug}/steps", response_model=list[StepOut], responses=errors(404))
async def step_list(service: ServiceDep, slug: SlugPath) -> list[StepOut]:
    """The plan's steps, oldest first."""
    return await run_in_threadpool(lambda: reads.plan(service.runtime, slug).steps)


@router.post("/{slug}/steps", status_code=201, response_model=StepRefOut,
             responses=errors(401, 404, e422="Bad title or body, or a dependency that is "
                                              "unknown or on the step itself."))
async def step_add(service: ServiceDep, slug: SlugPath, step: StepIn, actor: AuthorDep,
                   key: IdempotencyKeyDep = None) -> StepRefOut:
    """Add a step to the plan, optionally depending on existing steps."""
    return await run_in_threadpool(
        lambda: service.answer(step.command(slug, actor), StepRefOut, key))


@router.get("/{slug}/ready", response_model=ReadyOut, responses=errors(404))
async def ready(service: ServiceDep, slug: SlugPath, limit: LimitQuery = None) -> ReadyOut:
    """What a claim would accept now, by priority then oldest first (a lapsed claim shows
    its lapsed holder), plus the held steps and the blocked ones with their blockers. A
    plain read: it records nothing (POST records the listing for the session). `limit`: at
    most so many of each (the `*_total` fields count them all)."""
    return await run_in_threadpool(lambda: service.ready(slug, limit=limit))


@router.post("/{slug}/ready", response_model=ReadyOut, responses=errors(401, 404))
async def ready_recorded(service: ServiceDep, slug: SlugPath, actor: ActorDep,
                         limit: LimitQuery = None) -> ReadyOut:
    """The same answer as GET, and the listing recorded in the session's stream
    (`ReadyListed`), so a timeline shows what the agent chose from (as `tasks_ready` over
    MCP does)."""
    return await run_in_threadpool(lambda: service.ready(slug, actor, limit))


@router.post("/{slug}/claim-next", response_model=ClaimNextOut,
             responses=errors(401, 404, e409="session_ended: the session cannot claim.",
                              e422=f"Bad lease_seconds, or wait_seconds outside "
                                   f"0..{c.MAX_WAIT_SECONDS}."))
async def claim_next(request: Request, service: ServiceDep, slug: SlugPath, actor: ActorDep,
                     key: IdempotencyKeyDep = None,
                     body: ClaimNextIn | None = None) -> ClaimNextOut | Response:
    """Atomically claim the plan's next ready step, skipping steps lost to a race, so a
    worker needs no bounce round trip. Steps are tried by priority (0 first), then the
    step heading the longest chain of open steps still waiting on it (the critical path
    first), then the oldest; `GET .../ready` keeps listing by priority, then age. When
    nothing is ready, `claimed` is null and `reason` says why: all_held, all_blocked,
    all_done, empty or none_ready (a mix).
    With `review`, it takes a step in review for the caller to review instead (not its
    own work, nor its key's; by priority, then age), or answers none_to_review.
    With `wait_seconds`, a call that finds nothing waits (holding no server thread) until
    a step becomes claimable and claims it, or answers why not when the time is up; a
    finished plan (all_done) answers at once. A caller that disconnects while it waits
    leaves the line: it is granted nothing (a claim that lands for it even so is released
    at once, as `caller_departed`)."""
    command = c.ClaimNext(slug, actor, body.lease_seconds if body else None,
                          body.wait_seconds if body else 0, bool(body and body.review))
    if command.wait_seconds == 0:
        return await service.answer_async(command, ClaimNextOut, key)
    try:
        return await unless_caller_leaves(
            request.receive, lambda: service.answer_async(command, ClaimNextOut, key))
    except CallerLeft:
        return Response(status_code=CLIENT_CLOSED_REQUEST)  # read by no one but the logs
