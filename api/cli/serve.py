"""`planledger serve`: the HTTP API on the embedded SQLite store, no set-up."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool

from planledger.api.cli import output
from planledger.api.cli.common import answering_errors
from planledger.api.cli.grammar import Values
from planledger.api.errors import ConfigError
from planledger.api.logs import configure_logging
from planledger.api.open_files import raise_open_file_limit
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import load_settings

if TYPE_CHECKING:
    from fastapi import FastAPI


def _steady_collector() -> None:
    """Hide start-up objects from the garbage collector, and make full collections rare.

    What start-up loads lives as long as the server. A full collection stops every thread
    while it walks the heap, and that pause set the p99 of claims made beside plan writes
    (figure: bench/findings.md). Our states hold no reference cycles, so little is lost."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 10)


def serve(v: Values) -> None:
    import uvicorn  # the web stack loads only here: other commands start faster without it

    from planledger.api.http.app import create_app
    from planledger.api.http.head_limit import HeadLimitedProtocol
    from planledger.api.http.server import (
        KEEP_ALIVE_SECONDS,
        SHUTDOWN_SECONDS,
        LedgerServer,
    )

    configure_logging()  # before the MCP server is built: it would install its own
    open_files = raise_open_file_limit()
    with answering_errors():
        settings = load_settings(db=v["db"], host=v["host"], port=v["port"],
                                 lease_default=v["lease_default"], open_files=open_files)
        runtime = open_runtime(settings.db, checkpoints=True)
        runtime.reads.resume()  # its first answer should not wait for the checkpoint
        try:
            refuse_open_exposure(settings.host, runtime)
            app = create_app(runtime, settings)
            _close_on_shutdown(app, runtime)
            _steady_collector()
            base = f"http://{settings.host}:{settings.port}"
            output.line(f"planledger: store {settings.db}")
            output.line(f"planledger: serving {base} — open {base}/ (the console) or "
                        f"{base}/docs (API reference); agents call {base}/api/… or MCP at "
                        f"{base}/mcp")
            # log_config=None: uvicorn's loggers write through ours (api.logs). httptools,
            # with the head limit h11 would hold (api.http.head_limit); uvloop where it is
            # installed (everywhere but Windows: "auto" picks it).
            config = uvicorn.Config(
                app, host=settings.host, port=settings.port, log_level="info",
                log_config=None, limit_concurrency=settings.max_connections,
                timeout_keep_alive=KEEP_ALIVE_SECONDS, http=HeadLimitedProtocol, loop="auto",
                timeout_graceful_shutdown=SHUTDOWN_SECONDS)
            LedgerServer(config, stopping=app.state.service.waiting.end_waits).run()
        finally:
            runtime.close()  # if it never served (a port in use): closed on shutdown else


def is_loopback(host: str) -> bool:
    """Whether binding `host` serves this machine only."""
    import ipaddress

    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # a name may resolve anywhere: treat it as reachable from outside


def refuse_open_exposure(host: str, runtime: Runtime) -> None:
    """Refuse to serve a store without access keys beyond this machine: anyone who could
    reach the port would write what every agent reads."""
    runtime.reads.catch_up()
    if is_loopback(host) or runtime.reads.key_index().any_live:
        return
    raise ConfigError(f"refusing to serve on {host}: the store holds no access key, so "
                      "anyone who can reach the port could write what agents read. Issue "
                      "one first: `planledger keys create --name NAME --role admin` (on "
                      "this store), or serve on 127.0.0.1")


def _close_on_shutdown(app: "FastAPI", runtime: Runtime) -> None:
    """Close the runtime as the app shuts down, saving the read model's checkpoint so the
    next start resumes where this one stopped. In the app's shutdown, which runs however
    the server stops (api.http.server), once its requests have ended."""
    serving = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(parent: "FastAPI") -> AsyncIterator[Any]:
        async with serving(parent) as state:
            yield state
        await run_in_threadpool(app.state.service.waiting.close)  # its follower reads the store
        await run_in_threadpool(runtime.close, checkpoint=True)

    app.router.lifespan_context = lifespan
