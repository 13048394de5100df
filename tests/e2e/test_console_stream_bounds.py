"""What one console stream may cost the server (issue 28, point 7), over a real socket.

Measured before: 1,000 stream clients took the claim p99 from 14 to 287 ms, and 20 clients
resuming from position 0 of a 14k-event log received 2.3 GB in 15 s. Now the streams a
server holds are capped (a setting; one more is answered 503 with Retry-After), a resume
from further back than `RESUME_POSITIONS` is told to read the console again (one `resync`
message), and each message is bounded in bytes, its page cut short rather than grown.
"""

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from planledger.api.console.changes import MESSAGE_BYTES, message_after
from planledger.api.console.routes import RESUME_POSITIONS
from planledger.api.console.slots import StreamSlots
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings, load_settings
from planledger.ledger.application import NewStep
from tests.support.live_server import author, live_server
from tests.support.sse import SentEvent, sent_events

JOIN = 30.0  # bounds a failure; never a synchronisation


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[Runtime]:
    opened = open_runtime(str(tmp_path / "ledger.sqlite"))
    yield opened
    opened.close()


def _log_end(runtime: Runtime) -> int:
    return runtime.store.log_end()


# --- a cap on the streams held at once ---------------------------------------------------


def test_a_stream_past_the_cap_is_answered_503_and_a_closed_one_frees_its_place(
    runtime: Runtime,
) -> None:
    settings = Settings(db=runtime.db, max_console_streams=2)
    with live_server(runtime, settings) as server, server.client() as http:
        slots: StreamSlots = server.app.state.console_streams
        with http.stream("GET", "/api/console/events") as first, \
                http.stream("GET", "/api/console/events") as second:
            # (Each reader is kept: a dropped one closes its connection.)
            readers = [sent_events(first), sent_events(second)]
            assert [next(r)[0] for r in readers] == ["ready", "ready"]
            refused = http.get("/api/console/events")
            assert refused.status_code == 503, refused.text
            assert int(refused.headers["Retry-After"]) >= 1
            body = refused.json()
            assert body["reason"] == "too_many_streams", body
            assert "PLANLEDGER_MAX_CONSOLE_STREAMS" in body["message"], body
            # The rest of the API answers as before.
            assert http.get("/api/plans").status_code == 200
        assert slots.wait_until_held(0, JOIN), "closed streams kept their places"
        with http.stream("GET", "/api/console/events") as again:
            assert again.status_code == 200
            assert next(sent_events(again))[0] == "ready"


def test_the_stream_cap_is_a_setting_refused_when_out_of_range(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    db = str(tmp_path / "ledger.sqlite")
    monkeypatch.setenv("PLANLEDGER_MAX_CONSOLE_STREAMS", "7")
    assert load_settings(db).max_console_streams == 7
    for wrong in ("0", "-3", "many"):
        monkeypatch.setenv("PLANLEDGER_MAX_CONSOLE_STREAMS", wrong)
        with pytest.raises(ValueError, match="PLANLEDGER_MAX_CONSOLE_STREAMS"):
            load_settings(db)


# --- a resume from far back ---------------------------------------------------------------


def _plan_of(runtime: Runtime, slug: str, steps: int, body: str = "") -> None:
    planner = runtime.ledger.start_session("planner").id
    runtime.ledger.create_plan(slug, slug, steps=[NewStep(f"step {i}", body)
                                                  for i in range(steps)], actor=planner)


def test_a_resume_from_further_back_than_the_bound_gets_one_resync_not_the_backlog(
    runtime: Runtime,
) -> None:
    _plan_of(runtime, "long", RESUME_POSITIONS + 50)
    end = _log_end(runtime)
    with live_server(runtime) as server, server.client() as http:
        headers = author(http)
        for resume in ({"Last-Event-ID": "0"}, {}):
            query = {} if resume else {"after": "0"}
            with http.stream("GET", "/api/console/events", headers=resume,
                             params=query) as stream:
                messages = sent_events(stream)
                event, ident, data = next(messages)
                assert event == "resync", (event, data[:200])
                resynced = json.loads(data)["position"]
                assert int(ident) == resynced >= end
                assert next(messages)[0] == "ready"
                # What comes next is what happens next, not the backlog.
                made = http.post("/api/plans/long/steps", headers=headers,
                                 json={"title": "one more"})
                assert made.status_code == 201, made.text
                event, _, data = next(messages)
            page = json.loads(data)
            assert event == "log"
            assert page["after"] == resynced, page["after"]
            assert "StepAdded" in [e["type"] for e in page["events"]], page["events"]


def test_a_resume_within_the_bound_gets_every_event_it_missed(runtime: Runtime) -> None:
    _plan_of(runtime, "short", 30)
    end = _log_end(runtime)
    with live_server(runtime) as server, server.client() as http, \
            http.stream("GET", "/api/console/events",
                        headers={"Last-Event-ID": str(end - 20)}) as stream:
        messages = sent_events(stream)
        assert next(messages)[0] == "ready"
        event, ident, data = next(messages)
    assert event == "log" and int(ident) == end
    assert [e["position"] for e in json.loads(data)["events"]] == list(
        range(end - 19, end + 1))


# --- messages bounded in bytes -------------------------------------------------------------


def _follow_to(stream: httpx.Response, end: int) -> list[SentEvent]:
    found: list[SentEvent] = []
    for message in sent_events(stream):
        found.append(message)
        if message[0] == "log" and int(message[1]) >= end:
            return found
    raise AssertionError("the stream ended before the log's end")


def test_a_backlog_of_large_events_comes_in_messages_bounded_in_bytes_none_lost(
    runtime: Runtime,
) -> None:
    body = "b" * 19_000
    _plan_of(runtime, "wide", 60, body)  # 60 events of ~19 KB: over a megabyte in all
    end = _log_end(runtime)
    with live_server(runtime) as server, server.client() as http, \
            http.stream("GET", "/api/console/events", params={"after": 0}) as stream:
        messages = _follow_to(stream, end)
    logs = [(ident, json.loads(data), data) for event, ident, data in messages
            if event == "log"]
    assert len(logs) > 1, "one message carried the whole backlog"
    assert all(len(data.encode()) <= MESSAGE_BYTES for *_, data in logs)
    positions = [e["position"] for _, page, _ in logs for e in page["events"]]
    assert positions == list(range(1, end + 1)), "events lost or sent twice"
    assert all(int(ident) == page["next_after"] for ident, page, _ in logs)


def test_one_event_larger_than_the_bound_is_still_sent_alone(runtime: Runtime) -> None:
    _plan_of(runtime, "huge", 3, "b" * 5_000)  # its last three events: a step each
    first = _log_end(runtime) - 2
    message = message_after(runtime, first - 1, 200, max_bytes=1_000)
    assert [e.position for e in message.change.events] == [first]
    assert message.change.more and message.change.next_after == first
    assert len(message.text.encode()) > 5_000
