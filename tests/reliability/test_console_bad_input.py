"""Hostile input to the console's stream over a real socket: a `Last-Event-ID` that is not
a log position (thousands of digits, digits of other scripts, signs, exponents) is ignored,
never answered with a 500; the stream starts from the log's end as if no id were sent."""

import json
from collections.abc import Iterator

import pytest

from planledger.api.runtime import Runtime, open_runtime
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server
from tests.support.seed import seed_auth_refresh

HOSTILE = [
    b"9" * 5000,  # past Python's int() digit limit
    b"9" * 19,  # a number past any log position
    "\u00b2".encode("latin-1"),  # superscript two: str.isdigit() says yes, int() says no
    "\u0663".encode(),  # Arabic-Indic three, as UTF-8
    "\uff11".encode(),  # fullwidth one, as UTF-8
    b"-1", b"+1", b"1e3", b"0x10", b"1_000", b"12 34", b"",
]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    db = tmp_path_factory.mktemp("console-input") / "ledger.sqlite"
    runtime: Runtime = open_runtime(str(db), clock=FakeClock(), ids=SequentialIds())
    seed_auth_refresh(runtime.ledger)
    with live_server(runtime) as server:
        yield server
    runtime.close()


def _ready_position(live: LiveServer, last_event_id: bytes) -> tuple[int, int]:
    """The stream's status and the position its `ready` message starts from."""
    with live.client() as client, client.stream(
            "GET", "/api/console/events", headers={"Last-Event-ID": last_event_id}) as stream:
        if stream.status_code != 200:
            stream.read()
            return stream.status_code, -1
        for line in stream.iter_lines():
            if line.startswith("data:"):
                return 200, int(json.loads(line.removeprefix("data:"))["position"])
    raise AssertionError("the stream ended before its ready message")


@pytest.mark.parametrize("last_event_id", HOSTILE, ids=lambda v: repr(v[:12]))
def test_a_last_event_id_that_is_not_a_log_position_is_ignored_never_a_500(
    live: LiveServer, last_event_id: bytes,
) -> None:
    end = live.runtime.reads.catch_up()
    assert _ready_position(live, last_event_id) == (200, end)


def test_a_last_event_id_that_is_a_log_position_is_resumed_from(live: LiveServer) -> None:
    assert _ready_position(live, b"3") == (200, 3)
    assert _ready_position(live, b"05") == (200, 5)
