"""What routes depend on, as typed aliases: the service, the caller, ids, keys.

Each dependency is `async`: they only look at the request and check an HMAC, and FastAPI
runs a plain `def` dependency on its thread pool: a hand-off to a worker thread and back
per dependency. A claim has three, and the hand-offs were a large share of its server time
(figure: bench/findings.md).
"""

from typing import Annotated

from fastapi import Depends, Header, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from planledger.api.access import Caller
from planledger.api.errors import Unauthorized
from planledger.api.http.gate import caller_of
from planledger.api.service import Service
from planledger.ledger.domain.ids import Actor, SessionId
from planledger.ledger.domain.references import STEP_TEXT_PATTERN


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


async def get_service(request: Request) -> Service:
    return _service(request)


ServiceDep = Annotated[Service, Depends(get_service)]

# Declared for the OpenAPI document (its "Authorize" button); the credential itself is
# read and proven once by the gate (api.http.gate), before any route runs.
_bearer = HTTPBearer(auto_error=False, description="An access key (`plk_…`, from `planledger "
                     "keys create`), a session token from POST /api/sessions, or the admin "
                     "token.")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


async def get_caller(request: Request, credentials: Credentials) -> Caller:
    return caller_of(request.scope)


CallerDep = Annotated[Caller, Depends(get_caller)]


async def require_session(request: Request, credentials: Credentials) -> SessionId:
    session = caller_of(request.scope).session
    if session is None:
        raise Unauthorized("this call acts for a session: send `Authorization: Bearer <token>` "
                           "with the token POST /api/sessions returned")
    return session


async def require_author(request: Request, credentials: Credentials) -> Actor:
    """Who makes a write that need not be a session's: a session, a key or the admin."""
    actor = caller_of(request.scope).actor
    if actor is None:
        raise Unauthorized("a write needs an author: send `Authorization: Bearer <…>` with a "
                           "session token (POST /api/sessions), an access key or the admin "
                           "token")
    return actor


ActorDep = Annotated[SessionId, Depends(require_session)]
AuthorDep = Annotated[Actor, Depends(require_author)]
# The admin's operations check the role with every other command (api.access): an admin
# key, a session started with one, or the admin token.
AdminDep = AuthorDep


# A plain header parameter, not a dependency: each dependency costs a solve per request.
IdempotencyKeyDep = Annotated[str | None, Header(
    alias="Idempotency-Key", description="Any unique string (a UUID): a retry with the same "
    "key gets the first answer and changes nothing.")]

# Ids are validated at the door so no odd string ever reaches a database driver.
# A step: its id, or its reference (`plan#5` sent as `plan%235`; `plan/key` as it is or
# as `plan%2Fkey`: the routes match the step as a path, api.http.routes_steps).
StepPath = Annotated[str, Path(pattern=STEP_TEXT_PATTERN, description="The step's id, or "
                               "its reference: `<plan>%23<number>` (`#` encoded) or "
                               "`<plan>/<key>` (`/` as it is or encoded, %2F).", examples=[
    "01KXMRCX4W2M8YB5Q2Y3V9ZP7N", "auth-refresh#5"])]
SessionPath = Annotated[str, Path(pattern=r"^[0-9A-Za-z_-]{1,64}$")]
SlugPath = Annotated[str, Path(pattern=r"^[a-z0-9-]{1,64}$", examples=["auth-refresh"])]
