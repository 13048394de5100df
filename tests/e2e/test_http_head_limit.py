"""`planledger serve` on uvicorn's httptools protocol (api.http.head_limit), through a
real socket: a request line and headers that are still arriving past 16 KiB are refused
with 400 and the connection closed, so headers sent for ever cannot hold the server's
memory; a request under the limit, and a body far larger than it, are served."""

import socket
from collections.abc import Iterator

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from planledger.api.http.head_limit import MAX_HEAD_BYTES, REFUSAL
from planledger.bench.servers import Replica, author_at, start_replica


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replica]:
    replica = start_replica(str(tmp_path_factory.mktemp("head") / "ledger.sqlite"))
    try:
        yield replica
    finally:
        replica.stop()


def _answer(server: Replica, pieces: list[bytes]) -> bytes:
    """What the server sends back for `pieces` sent one after another, until it closes
    (or stops reading: a write that fails means it closed)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as connection:
        try:
            for piece in pieces:
                connection.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
        return received


def test_an_unfinished_head_past_the_limit_is_refused(server: Replica) -> None:
    header = b"x-filler: " + b"a" * 1000 + b"\r\n"
    pieces = [b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n"]
    pieces += [header] * (MAX_HEAD_BYTES // len(header) + 4)  # never the blank line
    answer = _answer(server, pieces)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert REFUSAL.encode() in answer  # ours, on httptools (h11 words its refusal otherwise)


def test_heads_under_the_limit_and_large_bodies_are_served(server: Replica) -> None:
    filler = "a" * (MAX_HEAD_BYTES - 2048)
    assert httpx.get(f"{server.url}/healthz", headers={"x-filler": filler}).status_code == 200
    steps = [{"title": f"step {i} " + "b" * 200} for i in range(300)]  # ~70 KB of body
    made = httpx.post(f"{server.url}/api/plans", headers=author_at(server.url), timeout=60,
                      json={"slug": "big-body", "title": "big", "steps": steps})
    assert made.status_code == 201, made.text
    assert len(made.json()["steps"]) == 300


def _silent_closed(connection: socket.socket, within: float) -> bool:
    """Whether the server closes `connection` within `within` seconds."""
    connection.settimeout(within)
    try:
        connection.recv(65536)  # the close (b""), or what the server said before it
        return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_connections_that_never_finish_a_head_are_closed_and_free_their_place(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A socket that is opened and sends nothing (or a byte now and then) must not hold a
    place of `max_connections` (uvicorn's limit_concurrency) for ever: a few of them would
    lock every client out with 503, without a request or a token."""
    import threading
    import time

    import uvicorn

    from planledger.api.http import head_limit

    # Long enough that the 503 below is asked while both sockets still hold their places,
    # however busy the machine; the drips below outlast it, so they must not reset it.
    monkeypatch.setattr(head_limit, "HEAD_SECONDS", 5.0)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                           limit_concurrency=2,
                                           http=head_limit.HeadLimitedProtocol))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        silent = socket.create_connection(("127.0.0.1", port))
        dripping = socket.create_connection(("127.0.0.1", port))
        dripping.sendall(b"GET / HTTP/1.1\r\n")
        held = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
        assert held.status_code == 503  # both places taken
        for _ in range(40):  # a byte every 0.3 s, up to 12 s: until the server closes it
            time.sleep(0.3)  # the pace of a slow drip, not a wait for the server
            try:
                dripping.sendall(b"x")
            except (BrokenPipeError, ConnectionResetError):
                break
        assert _silent_closed(silent, 30) and _silent_closed(dripping, 30)
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code == 200
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
