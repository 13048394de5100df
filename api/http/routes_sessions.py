"""Sessions: an agent's identity. Start one to get a token; end it to release its claims."""

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from planledger.api import reads
from planledger.api.errors import Forbidden
from planledger.api.http.deps import (
    ActorDep,
    CallerDep,
    IdempotencyKeyDep,
    ServiceDep,
    SessionPath,
)
from planledger.api.http.docs import errors
from planledger.api.http.running import run_command
from planledger.api.schemas import (
    SessionEndIn,
    SessionEndOut,
    SessionOut,
    SessionStartIn,
    SessionStartOut,
)
from planledger.ledger import commands as c

router = APIRouter(prefix="/api/sessions", tags=["sessions"])


@router.post("", status_code=201, response_model=SessionStartOut, responses=errors())
async def session_start(service: ServiceDep, caller: CallerDep, key: IdempotencyKeyDep = None,
                        body: SessionStartIn | None = None) -> SessionStartOut:
    """Start a session. The answer carries the session id and its secret token: send the
    token as `Authorization: Bearer <token>` on every call acting for the session. Once
    the server has access keys, send one (a worker's or above): the session takes its
    role."""
    command = caller.starting(body.command() if body else c.StartSession())
    return await run_command(service, lambda: service.start_session(command, key))


@router.get("/{session_id}", response_model=SessionOut, responses=errors(404))
async def session_show(service: ServiceDep, session_id: SessionPath) -> SessionOut:
    """A session and the steps it holds now (live leases only), with time left."""
    return await run_in_threadpool(lambda: reads.session(service.runtime, session_id))


@router.post("/{session_id}/end", response_model=SessionEndOut,
             responses=errors(401, 403, 404, e409="session_ended: it has ended already."))
async def session_end(service: ServiceDep, session_id: SessionPath, actor: ActorDep,
                      key: IdempotencyKeyDep = None,
                      body: SessionEndIn | None = None) -> SessionEndOut:
    """End the session; every step it holds is released, each as its own event. The body
    may carry `findings` (kept on the session's timeline)."""
    if actor != session_id:
        raise Forbidden(f'the token is for session "{actor}", not "{session_id}"')
    findings = body.findings if body else None
    return await run_in_threadpool(
        lambda: service.answer(c.EndSession(actor, findings), SessionEndOut, key))
