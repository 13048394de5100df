"""The MCP handshake, answered without the MCP SDK: `planledger mcp` (stdio) answers its
client's `initialize` as soon as it reads it, and loads the SDK and opens the store after.

An agent's client waits for that answer before anything else, and starts several servers
at once; loading the SDK and the store first made the answer take seconds (issue 19). The
program calls `answer_early` before it even parses the command's arguments (the command
line library loads pydantic to do that), and `planledger mcp` takes the wire after.
The answer is the one the SDK's server gives (tests/integration/test_mcp_handshake.py
holds the two equal), so the SDK is then handed the same request and its answer dropped.
"""

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, BinaryIO, NamedTuple

from planledger import __version__

INSTRUCTIONS = """planledger: one dependency-aware queue of plan steps shared by several
agents; a claimed step is never worked twice. Call session_start first and read the
constraints in its briefing. To pick up work: tasks_ready(plan), tasks_claim(step_id) the first
ready step (or tasks_claim_next(plan)), re-claim it as a heartbeat while you work, then
tasks_complete(step_id). If a claim bounces (`task already claimed: held by ...`), leave that
step alone: call tasks_ready again and claim from the fresh list. session_end when you stop."""

# The protocol revisions the SDK negotiates through `initialize` (mcp_types.version's
# HANDSHAKE_PROTOCOL_VERSIONS): the client's when it is one of them, else the newest.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CAPABILITIES: dict[str, Any] = {
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": False},
    "tools": {"listChanged": False},
}
SERVER_INFO = {"name": "planledger", "title": "planledger", "version": __version__}


def initialize_answer(line: bytes) -> tuple[Any, bytes] | None:
    """The request's id and the line answering it, when `line` is an `initialize`
    request; None for anything else (the SDK answers that itself)."""
    try:
        request = json.loads(line)
    except ValueError:
        return None
    if not isinstance(request, dict) or request.get("method") != "initialize" \
            or "id" not in request or not isinstance(request.get("params"), dict):
        return None
    asked = request["params"].get("protocolVersion")
    version = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    result = {"capabilities": CAPABILITIES, "instructions": INSTRUCTIONS,
              "protocolVersion": version, "serverInfo": SERVER_INFO}
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    return request["id"], json.dumps(answer, separators=(",", ":")).encode() + b"\n"


class Wire(NamedTuple):
    """The protocol's stdin and stdout, the first line read from it, and the id of the
    `initialize` answered already (None if none was). It is a named tuple, not a
    dataclass, because `dataclasses` loads `inspect` and that delays the answer. Servers
    started together on few cores wait for each other's loading (bench/findings.md)."""

    reader: BinaryIO
    writer: BinaryIO
    first: bytes
    answered: Any


_claimed: list[Wire] = []  # the process's one wire, once claimed


def answer_early(args: Sequence[str]) -> None:
    """Before `planledger mcp ARGS` is parsed: on the embedded store, claim the wire and
    answer `initialize` now. Relayed to a server (--url), its answer is the server's, and
    `--help` is for people: those are left to the command."""
    if os.environ.get("PLANLEDGER_URL") or any(
            arg in ("--help", "-h", "--url") or arg.startswith("--url=") for arg in args):
        return
    take_wire()


def take_wire() -> Wire:
    """The wire, claimed (and `initialize` answered) once per process."""
    if not _claimed:
        reader, writer = _claim_stdio()
        first = reader.readline()
        answered = None
        early = initialize_answer(first) if first else None
        if early is not None:
            writer.write(early[1])
            writer.flush()
            answered = early[0]
        _claimed.append(Wire(reader, writer, first, answered))
    return _claimed[0]


def _claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The protocol's own copies of stdin and stdout. Then fd 0 reads nothing and fd 1
    writes to stderr, so nothing a library or a child prints can reach the wire (what the
    SDK's stdio transport does when it owns the streams)."""
    sys.stdout.flush()
    reader = os.fdopen(os.dup(0), "rb")
    writer = os.fdopen(os.dup(1), "wb")
    nothing = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nothing, 0)
    os.close(nothing)
    os.dup2(2, 1)
    return reader, writer
