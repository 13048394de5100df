"""The HTTP API on a real socket: uvicorn serving `create_app` in a thread of the test.

The app runs in-process so tests keep their injected FakeClock and predictable ids, yet
every request crosses a real TCP connection on a free port of 127.0.0.1.
"""

import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import httpx
import uvicorn
from fastapi import FastAPI
from starlette.types import ASGIApp

from planledger.api.http.app import create_app
from planledger.api.http.server import KEEP_ALIVE_SECONDS
from planledger.api.runtime import Runtime
from planledger.api.settings import Settings

START_TIMEOUT = 15.0


@dataclass(frozen=True)
class LiveServer:
    url: str
    runtime: Runtime
    app: FastAPI

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@contextmanager
def live_server(runtime: Runtime, settings: Settings | None = None,
                lifespan: Literal["on", "off"] = "off") -> Iterator[LiveServer]:
    """Serve `runtime` until the block ends (`lifespan="on"`: with `/mcp`, which runs in the
    app's lifespan)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(runtime, settings or Settings(db=runtime.db, port=port))
    with serving(app, lifespan, sock) as url:
        yield LiveServer(url, runtime, app)


@contextmanager
def serving(app: ASGIApp, lifespan: Literal["on", "off"] = "off",
            sock: socket.socket | None = None) -> Iterator[str]:
    """Serve any ASGI app on `sock` (else a free port of 127.0.0.1) until the block ends;
    its base URL."""
    if sock is None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan,
                                           timeout_keep_alive=KEEP_ALIVE_SECONDS))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started:  # poll with a deadline: only for the server to come up
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def session(client: httpx.Client, name: str) -> tuple[str, dict[str, str]]:
    """Start a session through `client`: its id and the headers that act for it."""
    started = client.post("/api/sessions", json={"name": name})
    assert started.status_code == 201, started.text
    body = started.json()
    return body["session_id"], {"Authorization": f"Bearer {body['token']}"}


def author(client: httpx.Client, name: str = "planner") -> dict[str, str]:
    """Headers that author plan and step changes (every write names its author): those of
    a session started for it."""
    return session(client, name)[1]


def post_together(clients: list[httpx.Client], path: str,
                  headers: dict[str, str] | None = None,
                  json: object = None) -> list[httpx.Response]:
    """POST `path` (with the `json` body, if any) from every client at once (a barrier
    releases them; each connects first, so the barrier releases requests, not handshakes);
    the answers in client order. Closes the clients."""
    for client in clients:
        client.get("/healthz")
    barrier = threading.Barrier(len(clients))

    def post(client: httpx.Client) -> httpx.Response:
        barrier.wait(60)
        return client.post(path, headers=headers, json=json)

    with ThreadPoolExecutor(len(clients)) as pool:
        answers = list(pool.map(post, clients))
    for client in clients:
        client.close()
    return answers
