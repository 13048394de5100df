"""What routes depend on, as typed aliases: the service, the caller's identity, ids, keys.

Each dependency is `async`: they only look at the request and check an HMAC, and FastAPI
runs a plain `def` dependency on its thread pool, a hand-off to a worker thread and back
per dependency (three per claim: about a third of its server time besides the ledger).
"""

from typing import Annotated

from fastapi import Depends, Header, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from planledger.api.errors import Unauthorized
from planledger.api.service import Service
from planledger.ledger.domain.ids import ADMIN, Actor, SessionId


def _service(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


async def get_service(request: Request) -> Service:
    return _service(request)


ServiceDep = Annotated[Service, Depends(get_service)]

_bearer = HTTPBearer(auto_error=False, description="A session token from POST /api/sessions, "
                     "or the admin token for force-release.")
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


# The identity checks take the request, not `ServiceDep`: a sub-dependency is solved
# again for each dependency that names it.
async def require_session(request: Request, credentials: Credentials) -> SessionId:
    if credentials is None:
        raise Unauthorized("this call acts for a session: send `Authorization: Bearer <token>` "
                           "with the token POST /api/sessions returned")
    return _service(request).identity.session_of(credentials.credentials)


async def require_author(request: Request, credentials: Credentials) -> Actor:
    """Who makes a write that need not be a session's: a session, or the admin."""
    if credentials is None:
        raise Unauthorized("a write needs an author: send `Authorization: Bearer <token>` with "
                           "a session token (POST /api/sessions) or the admin token")
    identity = _service(request).identity
    if identity.is_admin(credentials.credentials):
        return ADMIN
    return Actor(identity.session_of(credentials.credentials))


async def require_admin(request: Request, credentials: Credentials) -> Actor:
    if credentials is None:
        raise Unauthorized("force-release needs `Authorization: Bearer <admin token>`")
    _service(request).identity.check_admin(credentials.credentials)
    return ADMIN


ActorDep = Annotated[SessionId, Depends(require_session)]
AuthorDep = Annotated[Actor, Depends(require_author)]
AdminDep = Annotated[Actor, Depends(require_admin)]


# A plain header parameter, not a dependency: each dependency costs a solve per request.
IdempotencyKeyDep = Annotated[str | None, Header(
    alias="Idempotency-Key", description="Any unique string (a UUID): a retry with the same "
    "key gets the first answer and changes nothing.")]

# Ids are validated at the door so no odd string ever reaches a database driver.
StepPath = Annotated[str, Path(pattern=r"^[0-9A-Za-z_-]{1,64}$", examples=[
    "01KXMRCX4W2M8YB5Q2Y3V9ZP7N"])]
SessionPath = Annotated[str, Path(pattern=r"^[0-9A-Za-z_-]{1,64}$")]
SlugPath = Annotated[str, Path(pattern=r"^[a-z0-9-]{1,64}$", examples=["auth-refresh"])]
