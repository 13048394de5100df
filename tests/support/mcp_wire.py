"""MCP as raw HTTP requests, for tests that send what no SDK client would: any
`Mcp-Session-Id` header on any call, in either protocol era.

A handshake-era connection is `initialize` (the server answers its `Mcp-Session-Id`),
`notifications/initialized`, then calls carrying that id. A stateless call (protocol
2026-07-28) is one POST whose `_meta` carries the protocol version and the client's
capabilities, with the routing headers that repeat the method and the tool's name.
"""

from dataclasses import dataclass
from typing import Any

import httpx

PATH = "/mcp"
HANDSHAKE_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
ACCEPT = "application/json, text/event-stream"
SESSION_HEADER = "mcp-session-id"


@dataclass(frozen=True)
class ToolAnswer:
    """A tools/call answer: a tool error's text, or the tool's structured result."""

    status: int
    error: str | None
    result: dict[str, Any] | None


def answer(response: httpx.Response) -> ToolAnswer:
    """The tool's answer in `response` (a protocol error counts as an error too)."""
    body = response.json()
    if "error" in body:
        return ToolAnswer(response.status_code, str(body["error"]["message"]), None)
    result = body["result"]
    if result.get("isError"):
        text = "\n".join(c.get("text", "") for c in result["content"])
        return ToolAnswer(response.status_code, text, None)
    return ToolAnswer(response.status_code, None, result.get("structuredContent"))


@dataclass
class Wire:
    """One HTTP client speaking MCP to a server's `/mcp` by hand."""

    http: httpx.Client

    def open(self) -> str:
        """A handshake-era connection: its `Mcp-Session-Id`."""
        opened = self.http.post(PATH, headers={"accept": ACCEPT}, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": HANDSHAKE_VERSION, "capabilities": {},
                "clientInfo": {"name": "raw client", "version": "1"}}})
        assert opened.status_code == 200, opened.text
        session = opened.headers[SESSION_HEADER]
        done = self.http.post(PATH, headers=self._handshake_headers(session),
                              json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert done.status_code == 202, done.text
        return session

    def call(self, session: str, tool: str, **arguments: Any) -> httpx.Response:
        """A handshake-era tools/call on the connection `session` names."""
        return self.http.post(PATH, headers=self._handshake_headers(session), json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}})

    def call_stateless(self, tool: str, headers: dict[str, str] | None = None,
                       **arguments: Any) -> httpx.Response:
        """A stateless (2026-07-28) tools/call, with any extra `headers`."""
        return self.http.post(PATH, headers={
            "accept": ACCEPT, "mcp-protocol-version": STATELESS_VERSION,
            "mcp-method": "tools/call", "mcp-name": tool, **(headers or {})}, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": tool, "arguments": arguments, "_meta": {
                    "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}}})

    def close(self, session: str) -> httpx.Response:
        """DELETE /mcp: the client ends its connection."""
        return self.http.delete(PATH, headers=self._handshake_headers(session))

    @staticmethod
    def _handshake_headers(session: str) -> dict[str, str]:
        return {"accept": ACCEPT, SESSION_HEADER: session,
                "mcp-protocol-version": HANDSHAKE_VERSION}
