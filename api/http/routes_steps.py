"""Steps: show with history, revise, declare dependencies, and the claim lifecycle:
claim, heartbeat, complete, release, drop, reopen, and an operator's force-release.

A step in a path is its id or its reference (ledger.domain.references): `plan#5` sent
as `plan%235` (a `#` would end the path), and `plan/key` sent as `plan%2Fkey` or as it
is, `/api/steps/plan/key/claim` (the segment is matched as a path, so either reads the
same; a key is never an action's name's place: the action is the last segment)."""

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from planledger.api import reads
from planledger.api.http.deps import (
    ActorDep,
    AdminDep,
    AuthorDep,
    IdempotencyKeyDep,
    ServiceDep,
    StepPath,
)
from planledger.api.http.docs import errors
from planledger.api.http.running import run_command
from planledger.api.schemas import (
    ClaimIn,
    ClaimOut,
    ClaimStepIn,
    CompleteIn,
    DependenciesIn,
    FenceIn,
    ForceReleaseOut,
    NoteAddedOut,
    NoteIn,
    ReviewIn,
    StepChangeOut,
    StepDetailOut,
    StepRefOut,
    StepRevisionIn,
    evidence_of,
    path_specs,
)
from planledger.ledger import commands as c

router = APIRouter(prefix="/api/steps", tags=["steps"])

_CLAIM_409 = ("already_claimed: another session holds a live lease; the body names the "
              'holder and the message reads `task already claimed: held by "<session>"`. '
              "blocked: the body lists the blockers. closed: the step is done or dropped. "
              "session_ended: the session cannot claim. paths_reserved: the claim's paths "
              "overlap another session's live reservation (holder, holder_step, patterns).")
_HOLDER_409 = ("not_holder: the session holds no live claim on the step (the body names who "
               "does). stale_fence: the call's fence is old (the body has fence and "
               "current_fence). closed: the step is done or dropped already.")


@router.get("/{step_id:path}", response_model=StepDetailOut, responses=errors(404))
async def step_show(service: ServiceDep, step_id: StepPath) -> StepDetailOut:
    """A step: status, holder, fence, blockers, and its history (claims, heartbeats,
    releases, revisions), oldest first."""
    return await run_in_threadpool(lambda: reads.step_detail(service.runtime, step_id))


@router.patch("/{step_id:path}", response_model=StepRefOut, responses=errors(
    401, 404, e409="held_elsewhere: another session holds the step (only its holder or the "
                   "admin revises it); session_ended: the token's session has ended."))
async def step_update(service: ServiceDep, step_id: StepPath, revision: StepRevisionIn,
                      actor: AuthorDep, key: IdempotencyKeyDep = None) -> StepRefOut:
    """Revise a step's title and/or body. A held step is revised by its holder (or the
    admin) only."""
    return await run_in_threadpool(
        lambda: service.answer(revision.command(step_id, actor), StepRefOut, key))


@router.post("/{step_id:path}/dependencies", response_model=StepRefOut,
             responses=errors(401, 404, e422="A dependency that is unknown, on the step "
                                              "itself, or that would close a cycle (named)."))
async def step_depend(service: ServiceDep, step_id: StepPath, deps: DependenciesIn,
                      actor: AuthorDep, key: IdempotencyKeyDep = None) -> StepRefOut:
    """Declare more dependencies of a step (steps of the same plan)."""
    return await run_in_threadpool(
        lambda: service.answer(deps.command(step_id, actor), StepRefOut, key))


@router.post("/{step_id:path}/claim", response_model=ClaimOut,
             responses=errors(401, 404, e409=_CLAIM_409))
async def claim(service: ServiceDep, step_id: StepPath, actor: ActorDep,
                key: IdempotencyKeyDep = None, body: ClaimStepIn | None = None) -> ClaimOut:
    """Claim a ready (or lapsed) step for the token's session: it moves to in_progress with
    a lease and a fence, and its paths (the step's, and `paths` given here) are reserved
    with it. Exactly one of any set of concurrent claims wins; the others get 409 naming
    the holder; a claim whose paths overlap another session's live reservation gets 409
    paths_reserved naming the holder, its step and the patterns. The holder's own re-claim
    is a heartbeat (its `paths` are added to what it holds)."""
    return await run_command(service,
        lambda: service.answer(
            c.Claim(step_id, actor, body.lease_seconds if body else None,
                    path_specs(body.paths if body else None), bool(body and body.review)),
            ClaimOut, key))


@router.post("/{step_id:path}/heartbeat", response_model=ClaimOut,
             responses=errors(401, 404, e409=_HOLDER_409))
async def heartbeat(service: ServiceDep, step_id: StepPath, actor: ActorDep,
                    key: IdempotencyKeyDep = None, body: ClaimIn | None = None) -> ClaimOut:
    """Extend the holder's lease; the fence stays. Refused once the lease has lapsed."""
    return await run_command(service,
        lambda: service.answer(
            c.Heartbeat(step_id, actor, body.lease_seconds if body else None), ClaimOut, key))


@router.post("/{step_id:path}/complete", response_model=StepChangeOut,
             responses=errors(401, 404, e409=_HOLDER_409 + " check_failed: the evidence "
                              "reports a failed check (named in `check`) and the plan "
                              "requires every check to pass.",
                              e422="Evidence out of bounds (the field is named: "
                                   "`evidence.commits[0]`, `evidence.pr`, …)."))
async def complete(service: ServiceDep, step_id: StepPath, actor: ActorDep,
                   key: IdempotencyKeyDep = None, body: CompleteIn | None = None,
                   ) -> StepChangeOut:
    """Mark the step done (holder only); releases the claim. `evidence` (optional) says
    what shows the work: the commits and their branch, the change request, the checks
    run. It is kept in the completion's event and shown in the step's history and the
    timeline. The answer names the steps it unblocked; with `claim_next`, the plan's next
    step is claimed for the caller too, as claim-next claims it (`next`)."""
    return await run_command(service,
        lambda: service.answer(
            c.Complete(step_id, actor, body.fence if body else None,
                       body.note if body else None,
                       evidence_of(body.evidence if body else None),
                       bool(body and body.claim_next), body.lease_seconds if body else None),
            StepChangeOut, key))


@router.post("/{step_id:path}/release", response_model=StepChangeOut,
             responses=errors(401, 404, e409=_HOLDER_409))
async def release(service: ServiceDep, step_id: StepPath, actor: ActorDep,
                  key: IdempotencyKeyDep = None, body: FenceIn | None = None) -> StepChangeOut:
    """Give the claim back (holder only); the step is claimable again at once."""
    return await run_command(service,
        lambda: service.answer(
            c.Release(step_id, actor, body.fence if body else None,
                    body.note if body else None), StepChangeOut, key))


@router.post("/{step_id:path}/drop", response_model=StepChangeOut,
             responses=errors(401, 404, e409=_HOLDER_409))
async def drop(service: ServiceDep, step_id: StepPath, actor: AuthorDep,
               key: IdempotencyKeyDep = None, body: FenceIn | None = None) -> StepChangeOut:
    """Drop the step (it no longer blocks its dependants): by its live holder, or by any
    session or the admin when nobody holds it."""
    return await run_command(service,
        lambda: service.answer(
            c.Drop(step_id, actor, body.fence if body else None,
                    body.note if body else None), StepChangeOut, key))


@router.post("/{step_id:path}/notes", status_code=201, response_model=NoteAddedOut,
             responses=errors(401, 404))
async def note(service: ServiceDep, step_id: StepPath, body: NoteIn, actor: AuthorDep,
               key: IdempotencyKeyDep = None) -> NoteAddedOut:
    """Leave a handoff note on a step (any author): the step's next claimer reads it in
    its claim's answer, and it shows in the step's history and the timeline."""
    return await run_command(service, lambda: service.answer(
        c.AddNote(step_id, actor, body.text), NoteAddedOut, key))


@router.post("/{step_id:path}/review", response_model=StepChangeOut,
             responses=errors(401, 404, e409="not_in_review: the step is not in review "
                              "(its status is named). already_claimed: another reviewer "
                              "holds it.", e403="own_work: you finished the work, or your "
                              "session shares its author's key (four eyes)."))
async def review(service: ServiceDep, step_id: StepPath, body: ReviewIn, actor: ActorDep,
                 key: IdempotencyKeyDep = None) -> StepChangeOut:
    """A reviewer's verdict on a step in review: approve (done; its dependents unblock)
    or reject (open again; the note is handed to its next claimer). Not by the session
    that finished it, nor by another session started with the same key."""
    return await run_command(service, lambda: service.answer(
        body.command(step_id, actor), StepChangeOut, key))


@router.post("/{step_id:path}/reopen", response_model=StepChangeOut,
             responses=errors(401, 404, e409="not_reopenable: the step is not done or "
                                              "dropped."))
async def reopen(service: ServiceDep, step_id: StepPath, actor: AuthorDep,
                 key: IdempotencyKeyDep = None) -> StepChangeOut:
    """Reopen a done or dropped step."""
    return await run_command(service, lambda: service.answer(
        c.Reopen(step_id, actor), StepChangeOut, key))


@router.post("/{step_id:path}/force-release", response_model=ForceReleaseOut,
             responses=errors(401, 403, 404))
async def force_release(service: ServiceDep, step_id: StepPath, admin: AdminDep,
                        key: IdempotencyKeyDep = None) -> ForceReleaseOut:
    """An operator's release of whatever claim the step carries. Needs the admin token
    (`PLANLEDGER_ADMIN_TOKEN`) as the bearer token."""
    return await run_command(service, lambda: service.answer(
        c.ForceRelease(step_id, admin), ForceReleaseOut, key))
