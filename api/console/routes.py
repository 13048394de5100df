"""The console's routes: the page at `/`, its assets under `/console/`, a bounded first
read at `/api/console`, pages of a plan's steps at `/api/console/steps` and the stream of
what each append changed at `/api/console/events`."""

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated

import anyio
from fastapi import APIRouter, FastAPI, Header, Query, Request
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from sse_starlette import EventSourceResponse, ServerSentEvent

from planledger.api.console.changes import SharedChanges, message_after
from planledger.api.console.live import LogWatch
from planledger.api.console.schemas import ConsoleOut, StepPageOut
from planledger.api.console.slots import HeldStream, StreamSlots
from planledger.api.console.snapshot import snapshot, steps_page
from planledger.api.console.steps import MAX_PAGE, Show
from planledger.api.console.tail import timeline_tail
from planledger.api.http.deps import ServiceDep
from planledger.api.http.docs import errors
from planledger.api.schemas import TimelineOut

STATIC = Path(__file__).with_name("static")
# The page loads nothing from outside the server, and the browser is told to refuse to.
POLICY = ("default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; "
          "script-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; "
          "frame-ancestors 'none'")
PAGE = 200  # events per message; a longer backlog goes out as several messages
# A Last-Event-ID the stream resumes from: a log position, as the stream wrote it. Anything
# else (thousands of digits, digits of other scripts) is ignored, as a stream with no id.
EVENT_ID = re.compile(r"[0-9]{1,18}")
KEEP_WAITING = 15.0
# A console that resumes from further back than this many log positions gets one `resync`
# message (read the console again) instead of the backlog. Backlogs sent to many resuming
# consoles at once ran to gigabytes (figure: bench/findings.md).
RESUME_POSITIONS = 1_000
RETRY_MS = 1000  # how soon a browser reconnects after losing the stream

router = APIRouter(tags=["console"])


def install_console(app: FastAPI) -> None:
    """Serve the console on `app` (whose state holds the API's service)."""
    runtime = app.state.service.runtime
    app.state.log_watch = LogWatch(runtime.reads)
    app.state.console_streams = StreamSlots(app.state.service.settings.max_console_streams)
    app.state.console_changes = SharedChanges(lambda after: message_after(runtime, after, PAGE))
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
    """What the console shows first, at one log position: every plan's progress, the first
    page of each unfinished plan's steps, lapsed claims, the live sessions and what each
    holds (fence, expiry). Its size does not grow with a plan's steps: more come from
    `/api/console/steps`, changes from `/api/console/events`."""
    return snapshot(service, plan)


@router.get("/api/console/steps", response_model=StepPageOut, responses=errors(404))
def console_steps(
    service: ServiceDep,
    plan: Annotated[str, Query(pattern=r"^[a-z0-9-]{1,64}$")],
    offset: Annotated[int, Query(ge=0, le=10**9, description="The step number (from 0) "
                                 "to start at: a page's next_offset.")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
    show: Annotated[Show, Query(description="Only steps of this kind.")] = "all",
    text: Annotated[str, Query(max_length=100, description="Only steps whose title holds "
                               "this text (any case).")] = "",
) -> StepPageOut:
    """A page of a plan's steps by number, with the plan's progress: what the console
    reads when a person asks for more, or filters."""
    return steps_page(service.runtime, plan, offset, limit, show, text)


@router.get("/api/console/timeline", response_model=TimelineOut, responses=errors(404))
def console_timeline(service: ServiceDep, plan: Annotated[str, Query(
        pattern=r"^[a-z0-9-]{1,64}$")]) -> TimelineOut:
    """The newest part of a plan's timeline (from about its 400th newest event on), as
    `/api/timeline?plan=` answers it: what the console reads first, then only what came
    since (`/api/timeline?after=next_after`)."""
    return timeline_tail(service, plan)


@router.get("/api/console/events", response_class=EventSourceResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "Server-sent events"},
                       **errors(e503="As many streams are open as the server follows "
                                "(PLANLEDGER_MAX_CONSOLE_STREAMS), or the store is busy; "
                                "retry after Retry-After seconds.")})
async def events(
    service: ServiceDep, request: Request,
    after: Annotated[int | None, Query(ge=0, le=2**62, description="Stream events after "
                                       "this log position (default: from now on).")] = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Log changes as they happen: a `ready` message with the position streaming starts
    from, then a `log` message within a second of every append, by this process or any
    other sharing the store: a page of `/api/log` with what it changed (the steps touched,
    their plans' progress, the sessions concerned, as they are now), at most 256 KiB (a
    longer backlog comes as several). Each message's id is the log position it reaches, so
    a reconnecting browser resumes where it left off; a `Last-Event-ID` that is not such a
    position is ignored. A resume from more than 1,000 positions back is sent one `resync`
    message first (`{"position", "message"}`: read `/api/console` again) and continues
    from the log's end."""
    watch: LogWatch = request.app.state.log_watch
    resume = _position(last_event_id)
    changes: SharedChanges = request.app.state.console_changes
    slots: StreamSlots = request.app.state.console_streams
    slots.take()
    return HeldStream(_stream(changes, watch, resume if resume is not None else after),
                      slots)


def _position(event_id: str | None) -> int | None:
    """The log position a Last-Event-ID names; None for anything else."""
    if event_id is None or not EVENT_ID.fullmatch(event_id.strip()):
        return None
    return int(event_id)


async def _stream(changes: SharedChanges, watch: LogWatch, after: int | None,
                  ) -> AsyncIterator[ServerSentEvent]:
    reached = await watch.join()
    try:
        if after is not None and reached - after > RESUME_POSITIONS:
            yield _resync(after, reached)
            after = reached
        position = reached if after is None else after
        yield ServerSentEvent(f'{{"position": {position}}}', event="ready", id=str(position),
                              retry=RETRY_MS)
        while True:
            if not await watch.moved_past(position, KEEP_WAITING):
                continue
            message = await changes.after(position)
            found = message.change
            position = max(found.next_after, position if found.events else watch.position)
            yield ServerSentEvent(message.text, event="log", id=str(position))
    finally:
        with anyio.CancelScope(shield=True):
            await watch.leave()


def _resync(after: int, reached: int) -> ServerSentEvent:
    body = json.dumps({"position": reached, "message": (
        f"the stream was asked to resume {reached - after} log positions back, more than "
        f"{RESUME_POSITIONS}: read /api/console again; the stream goes on from {reached}")})
    return ServerSentEvent(body, event="resync", id=str(reached), retry=RETRY_MS)
