"""Nobody can hold every MCP session: over a real socket (the app's lifespan on, which
runs `/mcp`), one client address holds at most `mcp_sessions_per_address` sessions (the
next `initialize` is answered 503 with Retry-After, naming the cap), and a session that
sent nothing after its handshake ends `mcp_fresh_seconds` after it began, while one that
called a tool lives on. Time is the watch's injected clock."""

from collections.abc import Iterator

import httpx
import pytest

from planledger.api.mcp.session_watch import SessionWatch
from planledger.api.runtime import Runtime
from planledger.api.settings import Settings
from tests.support.live_server import LiveServer, live_server
from tests.support.mcp_wire import ACCEPT, HANDSHAKE_VERSION, PATH, Wire

CAP = 3
FRESH = 60.0


@pytest.fixture
def served(rt: Runtime) -> Iterator[tuple[LiveServer, list[float]]]:
    settings = Settings(db=rt.db, mcp_fresh_seconds=FRESH, mcp_sessions_per_address=CAP)
    with live_server(rt, settings, lifespan="on") as server:
        moment = [1_000.0]
        watch: SessionWatch = server.app.state.mcp_sessions
        watch.now = lambda: moment[0]
        yield server, moment


def initialize(http: httpx.Client) -> httpx.Response:
    return http.post(PATH, headers={"accept": ACCEPT}, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": HANDSHAKE_VERSION, "capabilities": {},
            "clientInfo": {"name": "flood", "version": "1"}}})


def test_one_address_holds_at_most_its_cap_and_unused_sessions_expire(
        served: tuple[LiveServer, list[float]]) -> None:
    server, moment = served
    with httpx.Client(base_url=server.url, timeout=30) as http:
        wire = Wire(http)
        working, *idle = [wire.open() for _ in range(CAP)]
        assert wire.call(working, "plans_list").status_code == 200
        refused = initialize(http)
        assert refused.status_code == 503, refused.text
        assert refused.json()["reason"] == "too_many_sessions"
        assert int(refused.headers["Retry-After"]) >= 1

        moment[0] += FRESH + 1  # the unused ones are past their minute
        assert initialize(http).status_code == 200  # their places were freed first
        for gone in idle:
            assert wire.call(gone, "plans_list").status_code == 404
        assert wire.call(working, "plans_list").status_code == 200


def test_stateless_calls_are_not_sessions_and_pass_at_the_cap(
        served: tuple[LiveServer, list[float]]) -> None:
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=30) as http:
        wire = Wire(http)
        for _ in range(CAP):
            wire.open()
        assert initialize(http).status_code == 503
        assert wire.call_stateless("plans_list").status_code == 200
