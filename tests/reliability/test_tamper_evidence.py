"""Tamper evidence: each event carries a hash chained to the previous event of its stream;
`planledger audit verify` checks a store or a recording and names the first event that was
changed, removed or reordered. A single flipped byte is enough to show."""

import json
import sqlite3
from pathlib import Path

import pytest

from planledger.api.cli.audit import store_entries
from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.chain import Broken, Verified, seal, unseal, verify
from planledger.ledger.domain import events as ev
from planledger.main import run as app
from planledger.replays.fixture import seed_auth_refresh
from planledger.replays.format import write_file
from planledger.replays.recording import export
from planledger.replays.rerun import rerun
from tests.support import OPERATOR
from tests.support.cli_runner import CliRunner
from tests.support.fakes import FakeClock, SequentialIds

runner = CliRunner()


def _some_work(runtime: Runtime, clock: FakeClock) -> None:
    steps = seed_auth_refresh(runtime.ledger, race=True)
    a, b = (runtime.ledger.start_session(n).id for n in ("agent A", "agent B"))
    grant = runtime.ledger.claim(steps[4], b, lease_seconds=60)
    runtime.ledger.heartbeat(steps[4], b, lease_seconds=60)
    clock.advance(61)
    runtime.ledger.claim(steps[4], a)
    runtime.ledger.complete(steps[4], a)
    runtime.ledger.claim(steps[5], b, lease_seconds=60)
    runtime.ledger.end_session(b)
    assert grant.fence == 1


@pytest.fixture
def sqlite_store(tmp_path: Path, clock: FakeClock) -> str:
    db = str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db, clock=clock, ids=SequentialIds())
    _some_work(runtime, clock)
    runtime.close()
    return db


@pytest.fixture
def recording(tmp_path: Path, clock: FakeClock) -> Path:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    _some_work(runtime, clock)
    path = tmp_path / "work.jsonl"
    write_file(export(runtime.store), path)
    runtime.close()
    return path


def _verify(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["audit", "verify", *args])
    return result.exit_code, result.output


def _event_lines(path: Path) -> list[tuple[int, dict[str, object]]]:
    lines = path.read_text().splitlines()
    return [(i, json.loads(t)) for i, t in enumerate(lines) if '"type":"event"' in t]


def test_an_untouched_store_and_its_recording_verify_intact(
    sqlite_store: str, recording: Path,
) -> None:
    code, out = _verify("--db", sqlite_store)
    assert code == 0 and "intact:" in out and "heads digest:" in out
    code, out = _verify(str(recording))
    assert code == 0 and "intact:" in out


def test_one_flipped_byte_in_the_store_names_the_changed_event(sqlite_store: str) -> None:
    with sqlite3.connect(sqlite_store) as db:
        rowid, stream, version, state = db.execute(
            "SELECT rowid, originator_id, originator_version, state FROM stored_events "
            "WHERE topic LIKE '%StepClaimed' ORDER BY rowid LIMIT 1").fetchone()
        flipped = bytearray(state)
        flipped[flipped.index(b'"fence":1') + len(b'"fence":')] ^= 0x01  # fence 1 -> 0
        db.execute("UPDATE stored_events SET state = ? WHERE rowid = ?", (bytes(flipped), rowid))

    code, out = _verify("--db", sqlite_store)

    assert code == 1
    assert f"(stream {stream}, version {version}) was changed" in out


def test_one_flipped_byte_in_a_recording_names_the_changed_event(recording: Path) -> None:
    lines = recording.read_text().splitlines(keepends=True)
    number, event = next((i, e) for i, e in _event_lines(recording)
                         if "Rate-limit" in json.dumps(e["state"]))
    lines[number] = lines[number].replace("Rate-limit", "Rate-limiT", 1)  # one byte
    recording.write_text("".join(lines))

    code, out = _verify(str(recording))

    assert code == 1
    assert f"event at position {event['position']} (stream plan:auth-refresh" in out
    assert "was changed" in out


def test_a_removed_event_is_named_where_its_stream_jumps(recording: Path) -> None:
    lines = recording.read_text().splitlines(keepends=True)
    events = _event_lines(recording)
    number, gone = next((i, e) for i, e in events if str(e["topic"]).endswith("LeaseRenewed"))
    after = next(e for i, e in events if i > number and e["stream"] == gone["stream"])
    recording.write_text("".join(lines[:number] + lines[number + 1:]))

    code, out = _verify(str(recording))

    assert code == 1
    assert (f"event at position {after['position']} (stream {gone['stream']}, version "
            f"{after['version']}) follows version {int(gone['version']) - 1}") in out
    assert "missing here (removed, or moved later)" in out


def test_two_events_of_a_stream_swapped_are_named(recording: Path) -> None:
    lines = recording.read_text().splitlines(keepends=True)
    events = [(i, e) for i, e in _event_lines(recording) if e["stream"] == "plan:auth-refresh"]
    (i, _), (j, _) = events[2], events[3]
    lines[i], lines[j] = lines[j], lines[i]
    recording.write_text("".join(lines))

    code, out = _verify(str(recording))

    assert code == 1 and "stream plan:auth-refresh, version 4) follows version 2" in out


def test_an_event_rewritten_with_a_fresh_hash_breaks_the_link_after_it(recording: Path) -> None:
    """A forger who re-seals the event he changed still breaks the next event's link."""
    lines = recording.read_text().splitlines(keepends=True)
    events = [(i, e) for i, e in _event_lines(recording) if e["stream"] == "plan:auth-refresh"]
    number, event = events[1]
    state = dict(event["state"])  # type: ignore[call-overload]
    state["title"] = "something else"
    prev = state.pop("prev_hash")
    state.pop("hash")
    body = json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode()
    sealed, _ = seal(prev, "plan:auth-refresh", 2, str(event["topic"]), body)
    lines[number] = json.dumps({**event, "state": json.loads(sealed)}) + "\n"
    recording.write_text("".join(lines))

    code, out = _verify(str(recording))

    assert code == 1
    assert f"position {events[2][1]['position']}" in out
    assert "was chained to another event than the one before it" in out


def test_a_stripped_hash_and_a_broken_line_are_refused_by_name(recording: Path) -> None:
    text = recording.read_text()
    lines = text.splitlines(keepends=True)
    number, event = _event_lines(recording)[0]
    stripped = {**event, "state": {k: v for k, v in event["state"].items()  # type: ignore[attr-defined]
                                   if k not in ("prev_hash", "hash")}}
    recording.write_text("".join([*lines[:number], json.dumps(stripped) + "\n",
                                  *lines[number + 1:]]))
    code, out = _verify(str(recording))
    assert code == 1 and "carries no hash" in out

    recording.write_text(text.replace('"type":"event"', '"type":"event', 1))
    code, out = _verify(str(recording))
    assert code == 1 and "is not JSON" in out


def test_a_sealed_recording_still_re_executes_byte_for_byte(recording: Path) -> None:
    from planledger.replays.reading import read_file

    loaded = read_file(recording)
    assert all("hash" in e.state for e in loaded.events)
    assert rerun(loaded).identical


def test_events_read_back_carry_no_chain_keys(clock: FakeClock) -> None:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    session = runtime.ledger.start_session("a")
    (event,) = list(runtime.store.stream(session.id))
    assert isinstance(event, ev.SessionStarted)
    assert "hash" not in vars(event) and "prev_hash" not in vars(event)
    assert not any(hasattr(cls, "__dataclass_fields__") and
                   {"hash", "prev_hash"} & set(cls.__dataclass_fields__)
                   for cls in vars(ev).values() if isinstance(cls, type))
    runtime.close()


def test_appends_from_a_second_process_continue_the_chain(sqlite_store: str,
                                                           clock: FakeClock) -> None:
    """A new process knows no stream's head; it reads it from the store."""
    again = open_runtime(sqlite_store, clock=clock)
    step = again.ledger.add_step("auth-refresh", "one more", actor=OPERATOR)  # the plan goes on
    session = again.ledger.start_session("c")
    again.ledger.claim(step, session.id)
    again.ledger.release(step, session.id)
    blind = open_runtime(sqlite_store, clock=clock)  # appends without reading the stream
    blind.store.append([ev.ReadyListed(session.id, 2, timestamp=clock.now(),
                                       session_id=session.id, plan="auth-refresh",
                                       step_ids=[])])
    blind.close()
    result = verify(store_entries(again.store))
    again.close()
    assert isinstance(result, Verified), result


def test_seal_and_unseal_agree_on_the_bytes() -> None:
    body = b'{"a":"\xc3\xa9","b":[1,2]}'
    sealed, digest = seal("", "s", 1, "t", body)
    found = unseal(sealed)
    assert found is not None and found.body == body and found.hash == digest
    assert unseal(seal("", "s", 1, "t", b"{}")[0]).body == b"{}"  # type: ignore[union-attr]
    assert unseal(body) is None
    assert isinstance(verify([]), Verified)
    assert not isinstance(verify([]), Broken)
