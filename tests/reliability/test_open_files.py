"""A server that runs out of open files keeps serving once the connections that used them
close (issue 28).

`planledger serve` runs with soft and hard limits of `MAX_FILES` open files, so raising the
soft one at start gains nothing. More idle connections than that fill every file the
server may open; once they close, `/healthz` must answer again. Before the fix the MCP
SDK's rich log handler failed to log the accept's EMFILE (it imports a module, which needs
a file), and the server never accepted a connection again.
"""

import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import planledger
from planledger.bench.servers import Replica, start_replica

MAX_FILES = 256
FLOOD = MAX_FILES + 50  # idle connections: more than the server can hold
# Deadlines bound a failure only: a healthy server meets each in well under a second.
DEADLINE = 60.0
# The child runs the code under test (this checkout's), not whichever copy is installed.
THIS_CODE = {"PYTHONPATH": str(Path(planledger.__file__).resolve().parents[1])}
EMFILE_TEXT = "Too many open files"


@pytest.fixture
def room_for_the_flood() -> Iterator[None]:
    """The test process may open the flood's sockets (and restores its limit after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = FLOOD + 200
    if soft >= needed:
        yield
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"this process may open {hard} files; the flood needs {needed}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Replica]:
    replica = start_replica(str(tmp_path / "ledger.sqlite"), THIS_CODE, max_files=MAX_FILES)
    try:
        yield replica
    finally:
        replica.stop()


def test_healthz_answers_after_idle_connections_used_every_open_file(
    room_for_the_flood: None, server: Replica,
) -> None:
    flood = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(FLOOD)]
    try:
        _wait_until_out_of_files(server)
    finally:
        for connection in flood:
            connection.close()
    closed = time.monotonic()
    answer = _healthz_within(server, DEADLINE)
    assert answer is not None and answer.status_code == 200, (
        f"/healthz did not answer within {DEADLINE}s of the connections closing:\n"
        f"{server.output()}")
    print(f"/healthz answered {time.monotonic() - closed:.2f}s after the flood closed")
    assert server.process.poll() is None


def _wait_until_out_of_files(server: Replica) -> None:
    """Until the server holds every file it may open (its /proc fd count at the limit):
    what it logs of the refused accept depends on its event loop (asyncio logs
    EMFILE_TEXT; uvloop retries without a word)."""
    deadline = time.monotonic() + DEADLINE
    held = Path(f"/proc/{server.process.pid}/fd")
    log = Path(server.log.name)
    while (len(list(held.iterdir())) < MAX_FILES  # poll with a deadline
           and EMFILE_TEXT not in log.read_text(errors="replace")):
        assert time.monotonic() < deadline, (
            f"the server did not run out of files within {DEADLINE}s:\n{server.output()}")
        time.sleep(0.05)


def _healthz_within(server: Replica, seconds: float) -> httpx.Response | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # poll with a deadline: the server recovering
        try:
            return httpx.get(f"{server.url}/healthz", timeout=min(5.0, seconds))
        except httpx.TransportError:
            time.sleep(0.05)
    return None
