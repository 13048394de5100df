"""When an MCP session ends, the ledger sessions bound to it are forgotten: the client's
DELETE /mcp, the session manager dropping it for idleness, the server stopping. The app is
served in-process on a real socket (its lifespan on, which runs `/mcp`), so the test can
read the server's connections afterwards."""

import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from planledger.api.mcp.acting import Connections
from planledger.api.runtime import Runtime, open_runtime
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server
from tests.support.mcp_wire import Wire, answer

GONE_WITHIN = 10.0  # seconds; a connection winds down in its own task after it ends


@pytest.fixture
def runtime(clock: FakeClock) -> Iterator[Runtime]:
    rt = open_runtime("memory", clock=clock, ids=SequentialIds())
    yield rt
    rt.close()


def connections(server: LiveServer) -> Connections:
    found: Connections = server.app.state.mcp.connections
    return found


def bound_session(server: LiveServer, wire: Wire) -> tuple[str, str]:
    """A handshake-era connection that started a session: (its Mcp-Session-Id, the session)."""
    connection = wire.open()
    started = answer(wire.call(connection, "session_start", name="short-lived"))
    assert started.result is not None, started.error
    session = str(started.result["session_id"])
    assert connections(server).started(connection) == [session]
    return connection, session


def eventually(condition: Callable[[], bool], what: str) -> None:
    """Wait (bounded) for the connection's own task to wind down."""
    deadline = time.monotonic() + GONE_WITHIN
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def test_a_connections_sessions_are_forgotten_when_its_client_deletes_the_mcp_session(
    runtime: Runtime,
) -> None:
    with live_server(runtime, lifespan="on") as server, \
            httpx.Client(base_url=server.url, timeout=30) as http:
        wire = Wire(http)
        connection, _ = bound_session(server, wire)
        kept, kept_session = bound_session(server, wire)
        assert wire.close(connection).status_code in (200, 204)
        eventually(lambda: connections(server).started(connection) == [],
                   "the deleted connection's session forgotten")
        assert connections(server).started(kept) == [kept_session]


def test_a_connections_sessions_are_forgotten_when_the_manager_drops_it_for_idleness(
    runtime: Runtime,
) -> None:
    with live_server(runtime, lifespan="on") as server, \
            httpx.Client(base_url=server.url, timeout=30) as http:
        server.app.state.mcp.session_manager.session_idle_timeout = 0.2  # for new sessions
        wire = Wire(http)
        connection, _ = bound_session(server, wire)
        eventually(lambda: connections(server).started(connection) == [],
                   "the idle connection's session forgotten")
        assert wire.call(connection, "tasks_ready").status_code == 404  # the SDK dropped it


def test_a_connections_sessions_are_forgotten_when_the_server_stops(runtime: Runtime) -> None:
    with live_server(runtime, lifespan="on") as server, \
            httpx.Client(base_url=server.url, timeout=30) as http:
        connection, _ = bound_session(server, Wire(http))
        kept = connections(server)
    assert kept.started(connection) == []
