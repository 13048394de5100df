"""One interface over two ways in: the embedded store (the service, in this process) or a
running server (its HTTP API). Commands call a `Client` and never care which."""

import getpass
import os
from types import TracebackType
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, TypeAdapter

from planledger.api import views
from planledger.api.errors import Replayed, Unauthorized
from planledger.api.schemas import (
    ClaimIn,
    ClaimNextOut,
    ClaimOut,
    FenceIn,
    LogPageOut,
    PlanCreatedOut,
    PlanIn,
    PlanOut,
    PlanSummaryOut,
    ReadyOut,
    SessionEndOut,
    SessionOut,
    SessionStartIn,
    SessionStartOut,
    StepChangeOut,
    StepDetailOut,
    TimelineOut,
)
from planledger.api.service import Service
from planledger.ledger.domain.ids import local_operator

T = TypeVar("T")


class RemoteError(Replayed):
    """An error answer from a server: its status and body, as `api.errors.problem` reads."""


class Unreachable(ConnectionError):
    """The server did not answer (refused, timed out, cut off): the HTTP client's own error
    as a message, so callers need not load the client to catch it."""


class Client(Protocol):
    def start_session(self, name: str | None) -> SessionStartOut: ...
    def end_session(self) -> SessionEndOut: ...
    def session(self, session_id: str) -> SessionOut: ...
    def create_plan(self, plan: PlanIn) -> PlanCreatedOut: ...
    def plans(self) -> list[PlanSummaryOut]: ...
    def plan(self, slug: str) -> PlanOut: ...
    def ready(self, slug: str) -> ReadyOut: ...
    def step(self, step_id: str) -> StepDetailOut: ...
    def claim(self, step_id: str, lease: int | None) -> ClaimOut: ...
    def claim_next(self, slug: str, lease: int | None) -> ClaimNextOut: ...
    def heartbeat(self, step_id: str, lease: int | None) -> ClaimOut: ...
    def complete(self, step_id: str, fence: int | None) -> StepChangeOut: ...
    def release(self, step_id: str, fence: int | None) -> StepChangeOut: ...
    def drop(self, step_id: str, fence: int | None) -> StepChangeOut: ...
    def log(self, after: int, limit: int) -> LogPageOut: ...
    def timeline(self, plan: str | None, sessions: list[str]) -> TimelineOut: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Client": ...
    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None: ...


def connect(url: str | None = None, *, db: str | None = None, token: str | None = None,
            session: str | None = None) -> Client:
    """The ledger's operations for a command or a script: on the server at `url`, else on
    the embedded store `db` (default ./.planledger/ledger.sqlite), acting for the session
    `token` proves (or, on the embedded store, `session` names). A client with no session
    acts for the one it starts (`start_session`). `planledger.Client` is this."""
    if url:
        return RemoteClient(url, token)
    from planledger.api.identity import Identity
    from planledger.api.runtime import open_runtime
    from planledger.api.settings import load_settings

    settings = load_settings(db=db)
    runtime = open_runtime(settings.db, checkpoints=True)
    identity = Identity(runtime.secret, settings.admin_token)
    actor = identity.session_of(token) if token and not session else session
    return LocalClient(Service(runtime, settings, identity), actor)


def operator_name() -> str:
    """The OS user running this command (its uid where the system names none)."""
    try:
        return getpass.getuser()[:64]
    except (OSError, KeyError):
        return f"uid-{os.getuid()}"


class LocalClient:
    """The embedded store: calls the service directly, acting for `actor` (if any). Plan
    and step changes made without a session are the local operator's (`local:<OS user>`):
    whoever can open the store's file is its operator, and the log names them."""

    def __init__(self, service: Service, actor: str | None) -> None:
        self.service = service
        self.actor = actor

    @property
    def author(self) -> str:
        return self.actor or local_operator(operator_name())

    def _actor(self) -> str:
        if self.actor is None:
            raise Unauthorized("this command acts for a session: pass --session ID (or "
                               "--token), or set PLANLEDGER_SESSION")
        return self.actor

    def start_session(self, name: str | None) -> SessionStartOut:
        started = self.service.start_session(name)
        self.actor = self.actor or started.session_id
        return started

    def end_session(self) -> SessionEndOut:
        return self.service.end_session(self._actor())

    def session(self, session_id: str) -> SessionOut:
        return views.session(self.service.runtime, session_id)

    def create_plan(self, plan: PlanIn) -> PlanCreatedOut:
        return self.service.create_plan(plan, self.author)

    def plans(self) -> list[PlanSummaryOut]:
        return views.plans(self.service.runtime)

    def plan(self, slug: str) -> PlanOut:
        return views.plan(self.service.runtime, slug)

    def ready(self, slug: str) -> ReadyOut:
        return self.service.ready(slug, self.actor)

    def step(self, step_id: str) -> StepDetailOut:
        return views.step_detail(self.service.runtime, step_id)

    def claim(self, step_id: str, lease: int | None) -> ClaimOut:
        return self.service.claim(step_id, self._actor(), lease)

    def claim_next(self, slug: str, lease: int | None) -> ClaimNextOut:
        return self.service.claim_next(slug, self._actor(), lease)

    def heartbeat(self, step_id: str, lease: int | None) -> ClaimOut:
        return self.service.heartbeat(step_id, self._actor(), lease)

    def complete(self, step_id: str, fence: int | None) -> StepChangeOut:
        return self.service.complete(step_id, self._actor(), fence)

    def release(self, step_id: str, fence: int | None) -> StepChangeOut:
        return self.service.release(step_id, self._actor(), fence)

    def drop(self, step_id: str, fence: int | None) -> StepChangeOut:
        return self.service.drop(step_id, self.author, fence)

    def log(self, after: int, limit: int) -> LogPageOut:
        return views.log_page(self.service.runtime, after, limit)

    def timeline(self, plan: str | None, sessions: list[str]) -> TimelineOut:
        return views.timeline(self.service.timelines, plan, sessions)

    def close(self) -> None:
        self.service.runtime.close()

    def __enter__(self) -> "LocalClient":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class RemoteClient:
    """A running server, over its HTTP API, with the session token (if any)."""

    def __init__(self, url: str, token: str | None, timeout: float = 30.0) -> None:
        import httpx  # here: an embedded store's commands never need it (a fifth of start-up)

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http: httpx.Client = httpx.Client(base_url=url.rstrip("/"), headers=headers,
                                               timeout=timeout)

    def _call(self, out: type[T], method: str, path: str, body: BaseModel | None = None,
              params: dict[str, Any] | None = None) -> T:
        import httpx  # loaded by __init__ already: this only names it

        try:
            response = self.http.request(
                method, path, params=params,
                json=body.model_dump(exclude_none=True) if body else None)
        except httpx.HTTPError as cut:
            raise Unreachable(str(cut)) from cut
        if response.status_code >= 400:
            try:
                error = response.json()
            except ValueError:
                error = {"reason": "http", "message": response.text[:500]}
            raise RemoteError(response.status_code, error)
        return TypeAdapter(out).validate_python(response.json())

    def start_session(self, name: str | None) -> SessionStartOut:
        started = self._call(SessionStartOut, "POST", "/api/sessions", SessionStartIn(name=name))
        if "Authorization" not in self.http.headers and started.token:
            self.http.headers["Authorization"] = f"Bearer {started.token}"
        return started

    def end_session(self) -> SessionEndOut:
        token = self.http.headers.get("Authorization", "").removeprefix("Bearer ")
        sid = token.rpartition(".")[0] or "-"  # a token names its session: <id>.<signature>
        return self._call(SessionEndOut, "POST", f"/api/sessions/{sid}/end")

    def session(self, session_id: str) -> SessionOut:
        return self._call(SessionOut, "GET", f"/api/sessions/{session_id}")

    def create_plan(self, plan: PlanIn) -> PlanCreatedOut:
        """Create the plan as this client's session; without one, as a session started for
        it (named after the OS user) and ended straight after: the log names its author."""
        if "Authorization" in self.http.headers:
            return self._call(PlanCreatedOut, "POST", "/api/plans", plan)
        self.start_session(f"{operator_name()} (plan create)")
        try:
            return self._call(PlanCreatedOut, "POST", "/api/plans", plan)
        finally:
            self.end_session()
            del self.http.headers["Authorization"]

    def plans(self) -> list[PlanSummaryOut]:
        return self._call(list[PlanSummaryOut], "GET", "/api/plans")

    def plan(self, slug: str) -> PlanOut:
        return self._call(PlanOut, "GET", f"/api/plans/{slug}")

    def ready(self, slug: str) -> ReadyOut:
        # With a session, the listing is recorded, as on the embedded store.
        method = "POST" if "Authorization" in self.http.headers else "GET"
        return self._call(ReadyOut, method, f"/api/plans/{slug}/ready")

    def step(self, step_id: str) -> StepDetailOut:
        return self._call(StepDetailOut, "GET", f"/api/steps/{step_id}")

    def claim(self, step_id: str, lease: int | None) -> ClaimOut:
        return self._call(ClaimOut, "POST", f"/api/steps/{step_id}/claim",
                          ClaimIn(lease_seconds=lease))

    def claim_next(self, slug: str, lease: int | None) -> ClaimNextOut:
        return self._call(ClaimNextOut, "POST", f"/api/plans/{slug}/claim-next",
                          ClaimIn(lease_seconds=lease))

    def heartbeat(self, step_id: str, lease: int | None) -> ClaimOut:
        return self._call(ClaimOut, "POST", f"/api/steps/{step_id}/heartbeat",
                          ClaimIn(lease_seconds=lease))

    def complete(self, step_id: str, fence: int | None) -> StepChangeOut:
        return self._close("complete", step_id, fence)

    def release(self, step_id: str, fence: int | None) -> StepChangeOut:
        return self._close("release", step_id, fence)

    def drop(self, step_id: str, fence: int | None) -> StepChangeOut:
        return self._close("drop", step_id, fence)

    def _close(self, action: str, step_id: str, fence: int | None) -> StepChangeOut:
        return self._call(StepChangeOut, "POST", f"/api/steps/{step_id}/{action}",
                          FenceIn(fence=fence))

    def log(self, after: int, limit: int) -> LogPageOut:
        return self._call(LogPageOut, "GET", "/api/log",
                          params={"after": after, "limit": limit})

    def timeline(self, plan: str | None, sessions: list[str]) -> TimelineOut:
        params = {k: v for k, v in (("plan", plan), ("session", sessions)) if v}
        return self._call(TimelineOut, "GET", "/api/timeline", params=params)

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> "RemoteClient":
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

