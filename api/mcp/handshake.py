"""The MCP handshake, answered without the MCP SDK: `planledger mcp` (stdio) answers its
client's `initialize` as soon as it reads it, and loads the SDK and opens the store after.

An agent's client waits for that answer before anything else, and starts several servers
at once; loading the SDK and the store first made the answer take seconds (issue 19).
The answer is the one the SDK's server gives (tests/integration/test_mcp_handshake.py
holds the two equal), so the SDK is then handed the same request and its answer dropped.
"""

import json
from typing import Any

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
