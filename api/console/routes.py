"""The console's routes: the page at `/`, its assets under `/console/`, one snapshot at
`/api/console` and the stream of log changes at `/api/console/events`."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated

import anyio
from anyio import to_thread
from fastapi import APIRouter, FastAPI, Header, Query, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from sse_starlette import EventSourceResponse, ServerSentEvent

from api import views
from api.console.live import LogWatch
from api.console.schemas import ConsoleOut
from api.console.snapshot import snapshot
from api.http.deps import ServiceDep
from api.http.docs import errors
from api.runtime import Runtime

STATIC = Path(__file__).with_name("static")
# The page loads nothing from outside the server, and the browser is told to refuse to.
POLICY = ("default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; "
          "script-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
          "frame-ancestors 'none'")
PAGE = 200  # events per message; a longer backlog goes out as several messages
KEEP_WAITING = 15.0
RETRY_MS = 1000  # how soon a browser reconnects after losing the stream

router = APIRouter(tags=["console"])


def install_console(app: FastAPI) -> None:
    """Serve the console on `app` (whose state holds the API's service)."""
    app.state.log_watch = LogWatch(app.state.service.runtime.reads)
    app.include_router(router)
    app.mount("/console", StaticFiles(directory=STATIC), name="console")


@router.get("/", include_in_schema=False)
def page() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers={
        "Content-Security-Policy": POLICY, "Cache-Control": "no-cache"})


@router.get("/api/console", response_model=ConsoleOut, responses=errors())
def console(service: ServiceDep, plan: Annotated[str | None, Query(
        pattern=r"^[a-z0-9-]{1,64}$", description="Show this plan's steps even if it is "
        "finished.")] = None) -> ConsoleOut:
    """What the console shows at one log position: every plan's progress, the steps of
    the unfinished ones, the live sessions and what each holds (fence, expiry)."""
    return snapshot(service, plan)


@router.get("/api/console/events", response_class=EventSourceResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "Server-sent events"}, **errors()})
async def events(
    service: ServiceDep, request: Request,
    after: Annotated[int | None, Query(ge=0, le=2**62, description="Stream events after "
                                       "this log position (default: from now on).")] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Log changes as they happen: a `ready` message with the position streaming starts
    from, then a `log` message (a page of `/api/log`) within a second of every append,
    by this process or any other sharing the store. Each message's id is the log position
    it reaches, so a reconnecting browser resumes where it left off."""
    watch: LogWatch = request.app.state.log_watch
    resume = _position(last_event_id)
    return EventSourceResponse(_stream(service.runtime, watch, resume or after))


def _position(event_id: str | None) -> int | None:
    return int(event_id) if event_id and event_id.isdigit() else None


async def _stream(runtime: Runtime, watch: LogWatch, after: int | None,
                  ) -> AsyncIterator[ServerSentEvent]:
    reached = await watch.join()
    try:
        position = reached if after is None else after
        yield ServerSentEvent(f'{{"position": {position}}}', event="ready", id=str(position),
                              retry=RETRY_MS)
        while True:
            if not await watch.moved_past(position, KEEP_WAITING):
                continue
            found = await to_thread.run_sync(views.log_page, runtime, position, PAGE)
            position = max(found.next_after, position if found.events else watch.position)
            yield ServerSentEvent(found.model_dump_json(), event="log", id=str(position))
    finally:
        with anyio.CancelScope(shield=True):
            await watch.leave()
