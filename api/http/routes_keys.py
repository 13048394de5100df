"""Access keys: issue, list and revoke them (an admin's; ledger.domain.access)."""

from typing import Annotated

from fastapi import APIRouter, Path
from starlette.concurrency import run_in_threadpool

from planledger.api.http.deps import AdminDep, CallerDep, ServiceDep
from planledger.api.http.docs import errors
from planledger.api.http.running import run_command
from planledger.api.schemas import KeyCreateIn, KeyIssuedOut, KeyOut, KeysOut
from planledger.ledger.domain.access import allows
from planledger.ledger.domain.errors import NotPermitted

router = APIRouter(prefix="/api/keys", tags=["keys"])

KeyNamePath = Annotated[str, Path(pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$",
                                  examples=["ci-bot"])]


@router.post("", status_code=201, response_model=KeyIssuedOut,
             responses=errors(401, 403, e409="key_exists: a live key has the name."))
async def key_create(service: ServiceDep, admin: AdminDep, body: KeyCreateIn) -> KeyIssuedOut:
    """Issue an access key with a role. The answer holds the key, once: the store keeps
    only its hash. Send it as `Authorization: Bearer <key>`."""
    return await run_command(service, lambda: service.issue_key(body.name, body.role, admin))


@router.get("", response_model=KeysOut, responses=errors(401, 403))
async def key_list(service: ServiceDep, caller: CallerDep) -> KeysOut:
    """Every key name, live and revoked, with its role and who issued and revoked it."""
    if not allows(caller.role, "admin"):
        raise NotPermitted("key.list", "admin", caller.role)
    return await run_in_threadpool(service.keys)


@router.post("/{name}/revoke", response_model=KeyOut, responses=errors(401, 403, 404))
async def key_revoke(service: ServiceDep, admin: AdminDep, name: KeyNamePath) -> KeyOut:
    """Revoke a key: it, and every session started with it, stop working at once."""
    return await run_command(service, lambda: service.revoke_key(name, admin))
