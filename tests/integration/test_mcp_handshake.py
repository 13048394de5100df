"""`planledger mcp` answers `initialize` before loading the MCP SDK (api.mcp.handshake):
that early answer is the one the SDK's server gives, and the SDK then serves the rest of
the session as if it had answered it."""

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from planledger.api.mcp import handshake
from planledger.bench.servers import PLANLEDGER


def _request(version: str, request_id: Any = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}).encode() + b"\n"


# The SDK's own stdio transport and server loop over the same tools, as `planledger mcp` ran
# before it answered early: whatever it answers `initialize` is what the early answer must be.
SDK_SERVER = """
import anyio
from mcp.server.stdio import stdio_server
from planledger.api.identity import Identity
from planledger.api.mcp.server import build_server
from planledger.api.runtime import open_runtime
from planledger.api.service import Service
from planledger.api.settings import load_settings
settings = load_settings(db="memory")
runtime = open_runtime(settings.db, checkpoints=False)
service = Service(runtime, settings, Identity(runtime.secret, settings.admin_token))
server = build_server(service, single_connection=True)
async def serve():
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
anyio.run(serve)
"""


def test_the_early_answer_is_the_sdk_servers_own() -> None:
    assert handshake.HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    for version in ("2025-06-18", "1999-01-01"):
        request = _request(version, 7)
        sdk = subprocess.run([sys.executable, "-c", SDK_SERVER], input=request,
                             capture_output=True, timeout=120, check=True)
        early = handshake.initialize_answer(request)
        assert early is not None
        assert json.loads(early[1]) == json.loads(sdk.stdout.splitlines()[0]), sdk.stderr


def test_a_known_version_is_echoed_and_an_unknown_one_gets_the_newest() -> None:
    for asked, agreed in (("2025-03-26", "2025-03-26"), ("1999-01-01", "2025-11-25")):
        early = handshake.initialize_answer(_request(asked, "a"))
        assert early is not None and early[0] == "a"
        assert json.loads(early[1])["result"]["protocolVersion"] == agreed


def test_anything_but_initialize_is_left_to_the_sdk() -> None:
    for line in (b"not json\n", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n',
                 b'{"jsonrpc":"2.0","method":"initialize","params":{}}\n', b"[1]\n"):
        assert handshake.initialize_answer(line) is None


def test_after_the_early_answer_the_sdk_serves_the_session_and_answers_initialize_once(
    tmp_path: Path,
) -> None:
    messages = [_request("2025-06-18"),
                b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
                b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n']
    answers = _answers_then_close(
        [PLANLEDGER, "mcp", "--db", str(tmp_path / "l.sqlite")], b"".join(messages), 2)
    assert [a["id"] for a in answers] == [1, 2], answers
    assert answers[0]["result"]["serverInfo"]["name"] == "planledger"
    assert any(t["name"] == "tasks_claim" for t in answers[1]["result"]["tools"])


def _call(request_id: int, tool: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}}).encode() + b"\n"


def test_requests_written_at_once_are_each_answered_and_a_long_answer_arrives_whole(
    tmp_path: Path,
) -> None:
    """Requests are written before a line is read: the server reads what the handshake's
    reader holds past its first line, and answers longer than a pipe holds (64 KiB) wait
    for the client to read, whole (api.mcp.stdio reads and writes on the event loop). The
    SDK runs requests side by side, so answers are matched by id."""
    titles = [f"step {i} " + "x" * 200 for i in range(600)]
    with subprocess.Popen([PLANLEDGER, "mcp", "--db", str(tmp_path / "l.sqlite")],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as server:
        assert server.stdin is not None and server.stdout is not None
        killer = threading.Timer(120, server.kill)  # bounds a hung server
        killer.start()

        def exchange(*messages: bytes) -> dict[Any, Any]:
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write(b"".join(messages))
            server.stdin.flush()
            asked = sum(b'"id"' in m for m in messages)
            answers = [json.loads(server.stdout.readline()) for _ in range(asked)]
            return {a["id"]: a for a in answers}

        try:
            assert set(exchange(
                _request("2025-06-18"),
                b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
                _call(2, "session_start", {"name": "pipelined"}))) == {1, 2}
            made = exchange(_call(3, "plans_create", {"plan": "big", "title": "Big",
                                                      "steps": titles}))
            assert not made[3]["result"].get("isError"), made
            shown = exchange(*(_call(4 + i, "plans_show", {"plan": "big", "limit": 1000})
                               for i in range(3)), _call(7, "plans_list", {}))
            server.stdin.close()
            server.wait()
        finally:
            killer.cancel()
            server.kill()
    assert set(shown) == {4, 5, 6, 7}
    for request_id in (4, 5, 6):
        assert len(json.dumps(shown[request_id])) > 1 << 16
        steps = shown[request_id]["result"]["structuredContent"]["steps"]
        assert [s["title"] for s in steps] == titles
    assert [p["slug"] for p in shown[7]["result"]["structuredContent"]["result"]] == ["big"]


def _answers_then_close(command: list[str], messages: bytes, count: int) -> list[Any]:
    """Send the messages and read `count` answers before closing stdin, as a client does:
    at end of input the SDK cancels the requests still in flight (its dispatcher's rule),
    so closing at once would race the answers. A kill after 120 s bounds a hung server."""
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as server:
        assert server.stdin is not None and server.stdout is not None
        killer = threading.Timer(120, server.kill)
        killer.start()
        try:
            server.stdin.write(messages)
            server.stdin.flush()
            answers = []
            for line in iter(server.stdout.readline, b""):
                answers.append(json.loads(line))
                if len(answers) == count:
                    break
            server.stdin.close()
            server.wait()
            return answers
        finally:
            killer.cancel()
            server.kill()


# Run as `planledger mcp` runs; when the early answer has been written, name what is loaded
# (on stderr: stdout is the protocol's) and stop there.
BEFORE_THE_ANSWER = """
import sys
from planledger.api.mcp import handshake
taken = handshake.take_wire
def take_and_tell():
    wire = taken()
    sys.stderr.write("LOADED " + " ".join(sorted(sys.modules)) + "\\n")
    raise SystemExit(0)
handshake.take_wire = take_and_tell
from planledger.main import main
main(["mcp", "--db", sys.argv[1]])
"""
# What costs CPU before the answer without being needed for it; eight servers started at
# once on two cores wait for each other's (bench/startup.py).
HEAVY = ("mcp", "mcp_types", "pydantic", "typer", "click", "anyio", "eventsourcing", "sqlite3",
         "dataclasses", "inspect", "planledger.ledger", "planledger.api.mcp.server")


def test_the_answer_is_written_before_anything_heavy_is_loaded(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", BEFORE_THE_ANSWER, str(tmp_path / "l.sqlite")],
                          input=_request("2025-06-18"), capture_output=True, timeout=120,
                          check=True)
    assert json.loads(done.stdout)["result"]["serverInfo"]["name"] == "planledger"
    loaded = done.stderr.decode().split("LOADED ", 1)[1].split()
    heavy = [m for m in loaded if m in HEAVY or m.startswith(tuple(f"{h}." for h in HEAVY))]
    assert heavy == [], heavy
