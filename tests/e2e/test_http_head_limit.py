"""`planledger serve` on uvicorn's httptools protocol (api.http.head_limit), through a
real socket: a request line and headers that are still arriving past 16 KiB are refused
with 400 and the connection closed, so headers sent for ever cannot hold the server's
memory; a request under the limit, and a body far larger than it, are served."""

import socket
from collections.abc import Iterator

import httpx
import pytest

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
