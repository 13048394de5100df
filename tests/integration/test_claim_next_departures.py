"""A waiting claim-next whose caller leaves: its wait ends, and a grant that lands for it
anyway is released at once, saying why (issue 28, point 4).

Measured before the fix: an HTTP client whose timeout ended its 60 s wait, and an MCP call
dropped after 2 s, were both granted the next freed step for 900 s while a live agent got
`all_held`. Each test here watches the server's line of waiters (`Waiting.waiting`) to know
a caller waits or has left; nothing sleeps."""

import asyncio
import queue
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel
from starlette.types import Receive, Scope, Send

from planledger.api import reads
from planledger.api.http.departure import CancelledWhenCallerLeaves
from planledger.api.identity import Identity
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.schemas import ClaimNextOut
from planledger.api.service import Service
from planledger.api.settings import Settings
from planledger.ledger import commands as c
from planledger.ledger.application import NewStep
from planledger.ledger.domain import events as ev
from planledger.projections.timeline import TimelineModel
from planledger.replays.derive import command_of
from planledger.replays.format import CommandRecord
from tests.e2e.mcp_agents import agents
from tests.support.live_server import LiveServer, author, live_server, serving, session

PLAN = "departures"
JOIN = 30.0  # bounds a failure; never a synchronisation


@pytest.fixture
def service(runtime: Runtime) -> Iterator[Service]:
    served = Service(runtime, Settings(db=runtime.db), Identity(b"s" * 32))
    yield served
    served.waiting.close()


def log(runtime: Runtime) -> list[Any]:
    return [event for _, event in runtime.store.log_after(0, 100_000)]


def released_reasons(runtime: Runtime, step_id: str) -> list[str]:
    return [e.reason for e in log(runtime)
            if isinstance(e, ev.StepReleased) and e.originator_id == step_id]


def claims_by(runtime: Runtime, session_id: str) -> list[str]:
    return [e.originator_id for e in log(runtime)
            if isinstance(e, ev.StepClaimed) and e.session_id == session_id]


# --- a grant that lands after its caller left -------------------------------------------


def test_a_grant_that_lands_after_its_caller_left_is_released_at_once_saying_why(
    runtime: Runtime, service: Service,
) -> None:
    """The caller is cancelled while its try is claiming (the try runs on a thread and
    cannot be stopped half-way): the claim lands, and is released as the caller is gone."""
    planner = runtime.ledger.start_session("planner").id
    step = runtime.ledger.create_plan(PLAN, "Departures", steps=(NewStep("the one step"),),
                                      actor=planner)[1]
    agent = runtime.ledger.start_session("agent").id
    command = c.ClaimNext(PLAN, agent, None, 60)
    trying, go_on = threading.Event(), threading.Event()

    def attempt(final: bool) -> BaseModel | None:
        trying.set()
        assert go_on.wait(JOIN), "the test never let the try go on"
        return service.answer(c.ClaimNext(PLAN, agent), ClaimNextOut)

    async def leave_while_trying() -> None:
        task = asyncio.ensure_future(service.waiting.claim_next(
            command, attempt, unclaim=service.release_departed))
        assert await asyncio.to_thread(trying.wait, JOIN), "the try never began"
        task.cancel()
        go_on.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(leave_while_trying())

    assert claims_by(runtime, agent) == [step[0]]
    assert released_reasons(runtime, step[0]) == ["caller_departed"]
    assert reads.step_detail(runtime, step[0]).status == "open"
    entries = [e.text for e in TimelineModel(runtime.store).timeline(plan=PLAN).entries]
    assert any("its caller left before it was told" in t for t in entries), entries


def test_a_release_for_a_departed_caller_is_recorded_and_replays_as_such() -> None:
    record = CommandRecord(seq=3, at=datetime(2026, 12, 6, tzinfo=UTC), session="s",
                           name="release", args={
        "step_id": "x", "session_id": "s", "fence": 1, "reason": "caller_departed"})
    assert command_of(record) == c.Release("x", "s", 1, reason="caller_departed")


# --- HTTP: a caller that disconnects --------------------------------------------------


def _raw_claim_next(server: LiveServer, token: str, seconds: int) -> socket.socket:
    """A claim-next sent on a socket of the test's own, so the test decides when the
    caller goes (closing it), as a client's timeout would."""
    host, port = server.url.removeprefix("http://").split(":")
    body = f'{{"wait_seconds": {seconds}}}'.encode()
    raw = socket.create_connection((host, int(port)), timeout=JOIN)
    raw.sendall(f"POST /api/plans/{PLAN}/claim-next HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    return raw


def test_an_http_caller_that_disconnects_leaves_the_line_and_is_granted_nothing(
    runtime: Runtime,
) -> None:
    with live_server(runtime) as server, server.client() as http:
        planner = author(http)
        made = http.post("/api/plans", headers=planner, json={
            "slug": PLAN, "title": "Departures", "steps": [{"title": "the one step"}]})
        step_id = made.json()["steps"][0]["step_id"]
        holder_id, holder = session(http, "holder")
        assert http.post(f"/api/steps/{step_id}/claim", headers=holder).status_code == 200
        gone_id, gone = session(http, "gone")
        _, live = session(http, "live")
        service: Service = server.app.state.service

        caller = _raw_claim_next(server, gone["Authorization"].split()[1], 60)
        assert service.waiting.waiting(PLAN, 1, JOIN), "the call never waited"
        caller.close()
        assert service.waiting.waiting(PLAN, 0, JOIN), "the departed caller still waits"

        ended = http.post(f"/api/sessions/{holder_id}/end", headers=holder)
        assert ended.status_code == 200, ended.text
        answer = http.post(f"/api/plans/{PLAN}/claim-next", headers=live).json()

    assert answer["claimed"]["step_id"] == step_id, answer
    assert claims_by(runtime, gone_id) == []


# --- an answered request: its work goes on ------------------------------------------


def test_work_an_app_does_after_answering_is_not_cancelled_as_a_departure() -> None:
    """Once an answer is complete, the server answers `receive` with a disconnect though
    the client is still there. The MCP SDK answers a notification 202 and only then hands
    it to its session: cancelling it there lost the client's `notifications/cancelled`
    under load, and the call it named went on waiting in line."""
    answered, outcome = threading.Event(), queue.Queue[str]()

    async def answers_then_works(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        await receive()  # the whole (empty) body: the watch on the caller begins
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        try:
            # The work after the answer: it ends once the client has read the answer, by
            # when the watch has heard the server's disconnect (it was due first).
            assert await anyio.to_thread.run_sync(answered.wait, JOIN), "never read"
            await anyio.lowlevel.checkpoint()
        except anyio.get_cancelled_exc_class():
            outcome.put("cancelled")
            raise
        outcome.put("finished")

    with serving(CancelledWhenCallerLeaves(answers_then_works)) as url, \
            httpx.Client(timeout=JOIN) as http:
        assert http.post(url).status_code == 202
        answered.set()
        assert outcome.get(timeout=JOIN) == "finished"


# --- MCP: a call the client gives up on -------------------------------------------------


@pytest.fixture
def mcp_server(tmp_path: Path) -> Iterator[LiveServer]:
    runtime: Runtime = open_runtime(str(tmp_path / "ledger.sqlite"))
    try:
        with live_server(runtime, lifespan="on") as served:
            yield served
    finally:
        runtime.close()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_an_mcp_call_the_client_abandons_leaves_the_line_and_is_granted_nothing(
    mcp_server: LiveServer, mode: str,
) -> None:
    service: Service = mcp_server.app.state.service

    def line_holds(count: int) -> Any:
        return anyio.to_thread.run_sync(service.waiting.waiting, PLAN, count, JOIN)

    async def story() -> tuple[dict[str, Any], str, str]:
        url = f"{mcp_server.url}/mcp"
        async with agents([url] * 3, [mode] * 3) as (holder, gone, live):
            for agent in (holder, gone, live):
                started = await agent.ok("session_start", name=agent.name)
                agent.session_id, agent.token = started["session_id"], started.get("token", "")
            made = await holder.ok("plans_create", plan=PLAN, title="Departures",
                                   steps=[{"title": "the one step"}])
            step_id = made["steps"][0]["step_id"]
            await holder.ok("tasks_claim", step_id=step_id)
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: gone.call("tasks_claim_next", plan=PLAN,
                                                   wait_seconds=60))
                assert await line_holds(1), "the call never waited"
                group.cancel_scope.cancel()  # the client gives the call up
            assert await line_holds(0), "the abandoned call still waits"
            await holder.ok("session_end")
            answer = await live.ok("tasks_claim_next", plan=PLAN)
            return answer, step_id, gone.session_id

    answer, step_id, gone_id = anyio.run(story)
    assert answer["claimed"]["step_id"] == step_id, answer
    assert claims_by(mcp_server.app.state.service.runtime, gone_id) == []



# --- refusals while the caller is watched ------------------------------------------------


def test_a_waiting_claim_next_on_an_unknown_plan_is_refused_not_a_server_error(
    runtime: Runtime,
) -> None:
    """The watch on the caller must not turn the domain's refusal into a 500 (schemathesis
    found this: the refusal came out wrapped in the watch's exception group)."""
    with live_server(runtime) as server, server.client() as http:
        _, caller = session(http, "caller")
        answer = http.post("/api/plans/no-such-plan/claim-next", headers=caller,
                           json={"wait_seconds": 5})
    assert answer.status_code == 404, answer.text
    assert answer.json()["reason"] == "unknown_plan", answer.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_waiting_mcp_claim_next_on_an_unknown_plan_is_a_tool_error(
    mcp_server: LiveServer, mode: str,
) -> None:
    async def story() -> str:
        async with agents([f"{mcp_server.url}/mcp"], [mode]) as (agent,):
            started = await agent.ok("session_start", name=agent.name)
            agent.session_id, agent.token = started["session_id"], started.get("token", "")
            return await agent.refused("tasks_claim_next", plan="no-such-plan",
                                       wait_seconds=5)

    assert "plan not found" in anyio.run(story)
