"""Who is calling, settled once per request, before any route runs.

The gate reads `Authorization: Bearer <credential>` (an access key, a session token or the
admin token: api.access) and leaves the `Caller` it proves in the request's scope, where
the routes' dependencies (api.http.deps) and the MCP tools (api.mcp) read it. While the
store holds a live key, a request without a valid credential is refused here with 401,
reads included; only `/healthz` and the static pages that ask for a key (the console's
shell, the API docs) stay open. With no key, a request without a credential passes as
nobody in particular (zero set-up on a laptop). Roles are checked later, per command.
"""

import logging

from starlette.concurrency import run_in_threadpool

from planledger.api.access import Access, Caller
from planledger.api.errors import Unauthorized
from planledger.api.http.asgi import ASGIApp, Receive, Scope, Send, header, send_refusal

log = logging.getLogger("planledger.http")
CALLER = "planledger.caller"  # the scope key the proven caller is kept under

# Paths that serve no ledger data: health, the console's page and assets, the API docs.
OPEN_PATHS = frozenset({"/healthz", "/", "/favicon.ico", "/docs", "/docs/oauth2-redirect",
                        "/redoc", "/openapi.json"})
DOCS_ASSETS = "/docs-assets"  # the API docs' scripts and styles (served from the package)
OPEN_PREFIXES = ("/console/", f"{DOCS_ASSETS}/")


def credential_of(authorization: str | None) -> str | None:
    """The credential in an `Authorization` value; Unauthorized for another scheme."""
    if authorization is None or not authorization.strip():
        return None
    scheme, _, credential = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        raise Unauthorized("send credentials as `Authorization: Bearer <key or token>`")
    return credential.strip()


def caller_of(scope: Scope) -> Caller:
    """The caller the gate proved for this request."""
    caller = scope.get(CALLER)
    assert isinstance(caller, Caller), "the credential gate runs before every route"
    return caller


class CredentialGate:
    """ASGI middleware: prove the caller, or refuse with 401 while keys are required."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def prove(self, credential: str | None) -> Caller:
        """The caller, judged on the keys as last folded (no I/O on the event loop) and,
        where that would refuse a credential or let nobody in particular pass, again on
        the log pulled first: a key issued, or the first key, may be new to this
        replica (issued by another one, or by `planledger keys create` on the file)."""
        if credential is not None or self.access.keys_required():
            try:
                return self.access.caller(credential)
            except Unauthorized:
                if credential is None:
                    raise
        try:
            await run_in_threadpool(self.access.reads.catch_up)
        except Exception:  # the route's own read says what is wrong with the store
            log.warning("the credential gate could not pull the log", exc_info=True)
        return self.access.caller(credential)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            scope[CALLER] = Caller(None, "reader")  # they serve no ledger data
        else:
            try:
                scope[CALLER] = await self.prove(credential_of(header(scope, b"authorization")))
            except Unauthorized as refused:
                await send_refusal(send, 401, refused.reason, str(refused), close=True)
                return
        await self.app(scope, receive, send)
