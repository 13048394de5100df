"""Over MCP, nobody acts for a session they cannot prove: an `Mcp-Session-Id` header is
not a credential. A stateless call (protocol 2026-07-28) acts for a session only with its
token, whatever headers it carries; a handshake-era connection acts for the sessions
started on it, and forgets them when it ends. Raw HTTP requests against a real server, so
the headers are exactly what an attacker would send (the SDK-client version of the attack
is in tests/e2e/test_mcp_http.py)."""

from collections.abc import Iterator
from dataclasses import dataclass
from uuid import uuid4

import httpx
import pytest

from tests.reliability.conftest import Served
from tests.support.mcp_wire import SESSION_HEADER, ToolAnswer, Wire, answer


@dataclass(frozen=True)
class Victim:
    """A handshake-era client that started a session and claimed the first of two steps."""

    connection: str
    session_id: str
    step: str
    other_step: str
    fence: int


@pytest.fixture
def wire(served: Served) -> Iterator[Wire]:
    with httpx.Client(base_url=served.url, timeout=30) as http:
        yield Wire(http)


def ok(response: httpx.Response) -> dict[str, object]:
    got = answer(response)
    assert got.error is None and got.result is not None, (response.status_code, got.error)
    return got.result


def refused(response: httpx.Response) -> ToolAnswer:
    got = answer(response)
    assert got.error is not None, f"should have been refused: {got.result}"
    return got


def claiming_victim(wire: Wire, slug: str) -> Victim:
    connection = wire.open()
    started = ok(wire.call(connection, "session_start", name="victim"))
    made = ok(wire.call(connection, "plans_create", slug=slug, title=slug,
                        steps=["first", "second"]))
    steps = [str(s["step_id"]) for s in made["steps"]]  # type: ignore[attr-defined]
    claimed = ok(wire.call(connection, "tasks_claim", id=steps[0]))
    assert claimed["holder"] == started["session_id"]
    return Victim(connection, str(started["session_id"]), steps[0], steps[1],
                  int(claimed["fence"]))  # type: ignore[call-overload]


def step_state(wire: Wire, step: str) -> tuple[object, object]:
    shown = ok(wire.call_stateless("tasks_list", id=step))
    first = shown["steps"][0]  # type: ignore[index]
    return first["status"], first.get("holder")


def test_a_stateless_call_with_the_victims_session_header_and_no_token_cannot_close_its_step(
    wire: Wire,
) -> None:
    victim = claiming_victim(wire, "acting-close")
    header = {SESSION_HEADER: victim.connection}
    for tool in ("tasks_complete", "tasks_release"):
        refusal = refused(wire.call_stateless(tool, header, id=victim.step))
        assert str(refusal.error).startswith("no session"), (tool, refusal.error)
    refused(wire.call_stateless("tasks_drop", header, id=victim.step))  # nobody's drop
    assert step_state(wire, victim.step) == ("in_progress", victim.session_id)
    closed = ok(wire.call(victim.connection, "tasks_complete", id=victim.step,
                          fence=victim.fence))
    assert closed["status"] == "done"


def test_a_stateless_call_with_the_victims_session_header_and_no_token_cannot_claim_for_it(
    wire: Wire,
) -> None:
    victim = claiming_victim(wire, "acting-claim")
    refusal = refused(wire.call_stateless("tasks_claim_next", {SESSION_HEADER: victim.connection},
                                          plan="acting-claim"))
    assert str(refusal.error).startswith("no session"), refusal.error
    assert step_state(wire, victim.other_step) == ("open", None)


def test_a_stateless_session_start_with_the_victims_header_binds_nothing_to_its_connection(
    wire: Wire,
) -> None:
    victim = claiming_victim(wire, "acting-bind")
    squatter = ok(wire.call_stateless("session_start", {SESSION_HEADER: victim.connection},
                                      name="squatter"))
    # the victim's connection still acts for its one session: no `ambiguous_session`
    claimed = ok(wire.call(victim.connection, "tasks_claim_next", plan="acting-bind"))
    assert claimed["claimed"]["holder"] == victim.session_id  # type: ignore[index]
    assert "pass token on every call" in str(squatter["briefing"])


def test_after_the_victims_delete_its_session_header_binds_nothing_in_either_era(
    wire: Wire,
) -> None:
    victim = claiming_victim(wire, "acting-deleted")
    assert wire.close(victim.connection).status_code in (200, 204)

    handshake = wire.call(victim.connection, "tasks_release", id=victim.step)
    assert handshake.status_code == 404  # the SDK: the connection is gone
    refusal = refused(wire.call_stateless("tasks_release", {SESSION_HEADER: victim.connection},
                                          id=victim.step))
    assert str(refusal.error).startswith("no session"), refusal.error
    assert step_state(wire, victim.step) == ("in_progress", victim.session_id)


def test_a_made_up_session_header_binds_nothing_in_either_era(wire: Wire) -> None:
    guessed = {SESSION_HEADER: uuid4().hex}
    assert wire.call(guessed[SESSION_HEADER], "session_start").status_code == 404  # the SDK

    first = ok(wire.call_stateless("session_start", guessed, name="first stateless"))
    ok(wire.call_stateless("plans_create", guessed, token=first["token"], slug="acting-guess",
                           title="acting-guess", steps=["only"]))
    # a second stateless client sending the same header does not act for the first's session
    refusal = refused(wire.call_stateless("tasks_claim_next", guessed, plan="acting-guess"))
    assert str(refusal.error).startswith("no session"), refusal.error
    refusal = refused(wire.call_stateless("session_end", guessed))
    assert str(refusal.error).startswith("no session"), refusal.error
