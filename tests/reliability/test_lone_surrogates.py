"""A lone surrogate (`"\\ud800"`: valid JSON, not Unicode text) in any string a client
sends is refused as bad input naming the field, on every route, every MCP tool and the
plan files of the CLI; it never reaches the store, never answers 500 and never drops
the connection (an answer that quotes it must still encode)."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from planledger.main import run as cli
from tests.reliability.conftest import Served
from tests.support import LOCAL
from tests.support.cli_runner import CliRunner
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import live_server, session
from tests.support.seed import seed_auth_refresh

LONE = "\ud800"


@pytest.fixture
def runtime(tmp_path: Path, clock: FakeClock) -> Iterator[Runtime]:
    rt = open_runtime(str(tmp_path / "ledger.sqlite"), clock=clock, ids=SequentialIds())
    yield rt
    rt.close()


@pytest.fixture
def client(runtime: Runtime) -> TestClient:
    # raise_server_exceptions: a 500 fails the test loudly, with its traceback
    return TestClient(create_app(runtime, Settings(db=runtime.db)), base_url=LOCAL)


def _raw(client: TestClient | httpx.Client, method: str, path: str, body: Any,
         headers: dict[str, str]) -> httpx.Response:
    # ensure_ascii: the surrogate travels as the JSON escape `\ud800`, as a client sends it
    return client.request(method, path, content=json.dumps(body, ensure_ascii=True),
                          headers={**headers, "content-type": "application/json"})


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        resolved: dict[str, Any] = document["components"]["schemas"][
            schema["$ref"].rsplit("/", 1)[1]]
        return resolved
    options = [o for o in schema.get("anyOf", []) if o.get("type") != "null"]
    return _resolve(document, options[0]) if len(options) == 1 else schema


def _string_fields(document: dict[str, Any], schema: dict[str, Any], path: tuple[Any, ...],
                   ) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(where, value to put there) for every string a body of `schema` can hold: a string
    field, an item of a list of strings, a key and a value of a map of strings, and the
    same inside nested objects and lists of them."""
    schema = _resolve(document, schema)
    kind = schema.get("type")
    if kind == "string":
        yield path, LONE
    elif kind == "array":
        for where, value in _string_fields(document, schema["items"], ()):
            yield path, [_place(where, value, document, schema["items"])]
    elif kind == "object" and "properties" in schema:
        for name, prop in schema["properties"].items():
            yield from _string_fields(document, prop, (*path, name))
    elif kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        yield path, {LONE: "rule"}
        yield path, {"name": LONE}


def _place(where: tuple[Any, ...], value: Any, document: dict[str, Any],
           schema: dict[str, Any]) -> Any:
    """A valid instance of `schema` (its required strings filled in) with `value` at
    `where`."""
    if not where:
        return value
    schema = _resolve(document, schema)
    instance: dict[str, Any] = {name: "a" for name in schema.get("required", [])}
    target: dict[str, Any] = instance
    for step in where[:-1]:
        target = target.setdefault(step, {})
    target[where[-1]] = value
    return instance


def _bodies(document: dict[str, Any]) -> Iterator[tuple[str, str, str, Any]]:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            schema = content["application/json"]["schema"]
            for where, value in _string_fields(document, schema, ()):
                yield method.upper(), path, ".".join(map(str, where)), _place(
                    where, value, document, schema)


def test_every_string_of_every_json_body_refuses_a_lone_surrogate_naming_its_field(
    client: TestClient, runtime: Runtime,
) -> None:
    steps = list(seed_auth_refresh(runtime.ledger, race=False))
    session_id, as_a = session(client, "agent A")
    ids = {"{step_id}": steps[4], "{slug}": "auth-refresh", "{session_id}": session_id}
    logged = client.get("/api/log", params={"limit": 1000}).json()["next_after"]
    tried = set()
    for method, template, field, body in _bodies(client.app.openapi()):  # type: ignore[attr-defined]
        path = template
        for name, value in ids.items():
            path = path.replace(name, value)
        answer = _raw(client, method, path, body, as_a)
        assert answer.status_code == 422, (method, path, field, answer.text)
        message = answer.json()["message"]
        assert "lone surrogate" in message and f"body.{field}" in message, (
            method, path, message)
        tried.add((method, template))
    # the five routes of the report, at least (sessions, plans, step keys, revisions,
    # dependencies), and any route added since
    assert {("POST", "/api/sessions"), ("POST", "/api/plans"),
            ("POST", "/api/plans/{slug}/steps"), ("PATCH", "/api/steps/{step_id}"),
            ("POST", "/api/steps/{step_id}/dependencies")} <= tried
    # nothing reached the log
    assert client.get("/api/log", params={"limit": 1000}).json()["next_after"] == logged


@pytest.mark.parametrize("body", [
    {"slug": "odd", "title": "t", "constraints": {LONE: 5}},  # the location quotes the key
    {"slug": "odd", "title": "t", LONE: 1},
])
def test_a_refusal_quoting_a_lone_surrogate_still_encodes(
    client: TestClient, body: dict[str, Any],
) -> None:
    _, as_a = session(client, "agent A")
    answer = _raw(client, "POST", "/api/plans", body, as_a)
    assert answer.status_code == 422, answer.text
    assert answer.json()["reason"] == "invalid_input"


def test_a_surrogate_sent_as_raw_bytes_is_refused_naming_the_field(client: TestClient) -> None:
    # Python's JSON decoder reads these bytes (UTF-8 of U+D800) as the lone surrogate too
    answer = client.post("/api/sessions", content=b'{"name": "\xed\xa0\x80"}',
                         headers={"content-type": "application/json"})
    assert answer.status_code == 422 and "body.name" in answer.json()["message"]


def test_bytes_that_are_not_utf8_are_refused_without_a_500(client: TestClient) -> None:
    answer = client.post("/api/sessions", content=b'{"name": "\xff"}',
                         headers={"content-type": "application/json"})
    assert 400 <= answer.status_code < 500


def test_over_a_real_socket_the_refusal_arrives_and_the_server_keeps_serving(
    runtime: Runtime,
) -> None:
    with live_server(runtime) as server, server.client() as http:
        answer = _raw(http, "POST", "/api/sessions", {"name": LONE}, {})
        assert answer.status_code == 422 and "body.name" in answer.json()["message"]
        assert http.get("/healthz").status_code == 200


STATELESS = "2026-07-28"


def _tool(http: httpx.Client, tool: str, arguments: dict[str, Any]) -> str:
    """A stateless MCP tools/call sent as raw JSON (no SDK client can encode a lone
    surrogate); the tool error's text."""
    meta = {"io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}
    answer = _raw(http, "POST", "/mcp", {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta}}, {
        "accept": "application/json, text/event-stream", "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call", "mcp-name": tool})
    assert answer.status_code < 500, answer.text
    result = answer.json()["result"]
    assert result["isError"], result
    return "\n".join(c["text"] for c in result["content"])


@pytest.mark.parametrize(("tool", "arguments", "named"), [
    ("session_start", {"name": LONE}, "name"),
    ("plans_create", {"slug": "s", "title": LONE}, "title"),
    ("plans_create", {"slug": "s", "title": "t", "steps": [LONE]}, "title"),
    ("plans_create", {"slug": "s", "title": "t", "steps": [{"title": "t", "body": LONE}]},
     "body"),
    ("plans_create", {"slug": "s", "title": "t", "constraints": {"c": LONE}}, "constraints"),
    ("tasks_add", {"plan": "surrogate-add", "title": LONE}, "title"),
    ("tasks_ready", {"plan": "surrogate-ready", "token": LONE}, "token"),
])
def test_an_mcp_tool_refuses_a_lone_surrogate_naming_the_argument(
    served: Served, tool: str, arguments: dict[str, Any], named: str,
) -> None:
    _, http = served.session("surrogates")
    try:
        if "plan" in arguments:
            http.post("/api/plans", json={"slug": arguments["plan"], "title": "t",
                                          "steps": [{"title": "t"}]}).raise_for_status()
        if tool != "session_start":  # the tools that act for a session need its token
            arguments = {"token": http.headers["Authorization"].split()[1], **arguments}
        text = _tool(http, tool, arguments)
        assert "lone surrogate" in text and named in text, text
        assert http.get("/healthz").status_code == 200
    finally:
        http.close()


def test_a_plan_file_holding_a_lone_surrogate_is_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text('slug: odd\ntitle: Odd\nsteps:\n  - title: "\\ud800"\n')
    result = CliRunner().invoke(cli, ["plan", "create", str(plan), "--db",
                                      str(tmp_path / "ledger.sqlite")])
    assert result.exit_code == 1, result.output
    assert "steps.0.title" in result.output and "lone surrogate" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
