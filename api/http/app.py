"""The FastAPI app: `create_app(runtime, settings)`.

The MCP server mounts at `/mcp` and the console at `/` on the app this returns. Every
error leaves as JSON through `api.errors.problem`; nothing an input can do yields a 500
(an unexpected failure is logged and answered with a clean body).

The routes are `async def` and hand their blocking work (the ledger, the store) to the
thread pool themselves (`run_in_threadpool`): FastAPI runs a plain `def` route on the
pool and then validates its answer on the pool again: two hand-offs where this makes one
(figure: bench/findings.md).
"""

import logging
import warnings

from eventsourcing.persistence import PersistenceError
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic.warnings import UnsupportedFieldAttributeWarning
from starlette.exceptions import HTTPException

from planledger import __version__
from planledger.api.console.routes import install_console
from planledger.api.errors import ApiError, Replayed, problem
from planledger.api.http import (
    routes_keys,
    routes_log,
    routes_plans,
    routes_reservations,
    routes_sessions,
    routes_steps,
)
from planledger.api.http.deadline import AnswerDeadline
from planledger.api.http.full_store import RefuseWhileFull
from planledger.api.http.gate import DOCS_ASSETS, CredentialGate
from planledger.api.http.latency import LatencyObserver
from planledger.api.http.limits import BodyLimit
from planledger.api.http.origin import OriginGuard
from planledger.api.identity import Identity
from planledger.api.mcp.http import install_mcp
from planledger.api.runtime import Runtime
from planledger.api.schemas import ErrorOut
from planledger.api.service import Service
from planledger.api.settings import Settings
from planledger.ledger.domain.errors import LedgerError
from planledger.ledger.storage import is_postgres, postgres_options

log = logging.getLogger("planledger.http")

DESCRIPTION = """An event-sourced plan ledger: several agents share one dependency-aware
queue of plan steps and never work the same step twice.

Start a session (`POST /api/sessions`), keep its token, list a plan's ready steps and
claim one with `Authorization: Bearer <token>`. A refused claim is 409 naming the holder.
Send `Idempotency-Key` on a write to make a retry safe."""


def create_app(runtime: Runtime, settings: Settings, identity: Identity | None = None,
               ) -> FastAPI:
    """The HTTP API over `runtime`. CORS stays closed: no cross-origin headers are sent."""
    identity = identity or Identity(runtime.secret, settings.admin_token)
    # /docs and /redoc load their scripts from the package, not a CDN: they work offline.
    app = FastAPIOffline(title="planledger", version=__version__, description=DESCRIPTION,
                         static_url=DOCS_ASSETS)
    app.state.service = Service(runtime, settings, identity)
    # The routes join the app's own table (their paths carry their prefixes already):
    # `include_router` wraps each router in a layer that re-derives its routes' context on
    # every request, at a cost to every claim (figure: bench/findings.md). The OpenAPI
    # document is the same either way.
    for router in (routes_sessions.router, routes_plans.router, routes_steps.router,
                   routes_reservations.router, routes_log.router, routes_log.ops,
                   routes_keys.router):
        app.router.routes.extend(router.routes)
    _without_alias_warning()
    install_console(app)
    install_mcp(app, app.state.service, settings.host)  # /mcp: the MCP tools (api/mcp)
    _install_errors(app)
    _install_latency(app)
    app.add_middleware(BodyLimit)  # 413 for a body over MAX_BODY_BYTES (api/http/limits.py)
    app.add_middleware(RefuseWhileFull, store=runtime.store)  # 503 at once (full_store.py)
    if is_postgres(runtime.db):  # 503 when the database answers nothing (api/http/deadline.py)
        seconds = int(postgres_options(runtime.db)["connect_timeout"]) + 1
        app.add_middleware(AnswerDeadline, seconds=seconds)
    app.add_middleware(CredentialGate, access=app.state.service.access)  # 401 (gate.py)
    app.add_middleware(OriginGuard, bind_host=settings.host,  # outermost: 403 (origin.py)
                       allowed=settings.allowed_hosts)
    return app


def _without_alias_warning() -> None:
    """Silence pydantic's alias warning, and only it: FastAPI names each body parameter
    with an alias, which pydantic (2.12 and later) flags on a model that defers its build
    (ours do, for the command line's start-up) though the alias works (pydantic/pydantic
    #12356). The flag is raised wherever such a model is first built: the OpenAPI document,
    or the first request that carries such a body; it would print on stderr each time."""
    warnings.filterwarnings("ignore", category=UnsupportedFieldAttributeWarning,
                            message="The 'alias' attribute")


def _json(status: int, body: ErrorOut) -> JSONResponse:
    headers = {"Retry-After": "1"} if status == 503 else None
    return JSONResponse(body.model_dump(mode="json", exclude_none=True), status, headers)


def _install_errors(app: FastAPI) -> None:
    async def answer(request: Request, error: Exception) -> Response:
        status, body = problem(error)
        if status == 503:
            # The store's known trouble (full, locked, unreachable) logs one line and no
            # traceback. Rendering a traceback blocked the event loop for every refused
            # write, and reads queued behind it (figure: bench/findings.md).
            log.warning("%s %s answered 503, %s (%s)", request.method, request.url.path,
                        body.message, str(error).strip() or type(error).__name__)
        elif status >= 500:
            log.error("%s %s failed", request.method, request.url.path, exc_info=error)
        return _json(status, body)

    async def invalid(request: Request, error: Exception) -> Response:
        assert isinstance(error, RequestValidationError)
        return _json(422, ErrorOut(reason="invalid_input", message=_readable(error)))

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        reason = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}.get(
            error.status_code, "http")
        return _json(error.status_code, ErrorOut(reason=reason, message=str(error.detail)))

    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(HTTPException, http_error)
    # Expected refusals are answered by the exception middleware; the catch-all
    # (Exception) runs in the outermost middleware, which logs the traceback as well.
    for expected in (LedgerError, ApiError, Replayed, PersistenceError, Exception):
        app.add_exception_handler(expected, answer)


def _readable(error: RequestValidationError) -> str:
    """`body.lease_seconds: Input should be a valid integer; ...` for people."""
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item.get("loc", ()))
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    return "invalid input: " + "; ".join(parts)


def _install_latency(app: FastAPI) -> None:
    service: Service = app.state.service
    app.add_middleware(LatencyObserver, metrics=service.metrics)
