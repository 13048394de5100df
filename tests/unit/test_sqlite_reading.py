"""An embedded store's file read without the library (infra.sqlite_reading) reads what the
store reads through it: every stored event decodes to the same event, pages hold the same
positions, the read model folds to the same answers and resumes from the same
checkpoint; and what it cannot read as the library does, it refuses rather than guesses.
"""

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from planledger.api import plain_answers
from planledger.api.runtime import Runtime, open_runtime
from planledger.infra.sqlite_reading import (
    STORE_NAME,
    FileLog,
    Reading,
    Unreadable,
    open_reading,
)
from planledger.ledger import commands as c
from planledger.ledger.commands import NewStep
from planledger.ledger.domain.paths import PathSpec
from planledger.ledger.notification_log import decode, page_after
from planledger.ledger.storage import checkpoint_path
from planledger.ledger.store import EventStore
from tests.support.fakes import FakeClock, SequentialIds

OPERATOR = "local:test"


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[tuple[str, Runtime]]:
    """An SQLite store with every kind of fact: plans, steps with dependencies, paths and
    priorities, sessions started and ended, claims held, lapsed, completed, released and
    dropped, notes, revisions; and a finished plan."""
    db = str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db, clock=clock, ids=SequentialIds(), checkpoints=True)
    ledger = runtime.ledger
    a, b = ledger.start_session("agent A").id, ledger.start_session(None).id
    made = ledger.execute(c.CreatePlan("auth", "Auth", OPERATOR, (("tests-first", "yes"),), (
        NewStep("Rotate", key="rotate", paths=(PathSpec("internal/auth/**"),)),
        NewStep("Limit", key="limit", priority=0, paths=(PathSpec("docs/", "shared"),)),
        NewStep("Roll out", key="rollout", depends_on=("rotate", "limit")),
        NewStep("Lapses", key="lapses"), NewStep("Dropped", key="dropped"))))
    steps = dict(zip(made.keys, made.step_ids, strict=True))
    ledger.claim(steps["lapses"], a, lease_seconds=60)
    ledger.claim(steps["limit"], a)
    ledger.execute(c.AddNote(steps["limit"], a, "half way"))
    ledger.complete(steps["limit"], a)
    ledger.revise_step(steps["rotate"], body="rotate them all", actor=OPERATOR)
    ledger.drop(steps["dropped"], OPERATOR)
    clock.advance(120)  # the lapsing claim's lease runs out
    ledger.claim(steps["rotate"], b, paths=[PathSpec("go.mod")])
    ledger.release(steps["rotate"], b)
    ledger.claim(steps["rotate"], b)
    _, (only,) = ledger.create_plan("small", "Small", steps=[NewStep("all of it")],
                                    actor=OPERATOR)
    ledger.claim(only, a)
    ledger.complete(only, a)
    ledger.end_session(a)
    yield db, runtime
    runtime.close()


def test_every_event_and_page_reads_as_the_librarys(store: tuple[str, Runtime]) -> None:
    db, runtime = store
    log = FileLog(Path(db))
    try:
        end = runtime.store.log_end()
        assert end > 20 and log.log_end() == end
        theirs, ours = page_after(runtime.store, 0, end + 5), page_after(log, 0, end + 5)
        assert [vars(n) for n in theirs] == [n._asdict() for n in ours]  # type: ignore[attr-defined]
        for (at, event), (position, read) in zip(decode(runtime.store, theirs),
                                                 decode(log, ours), strict=True):
            assert (position, type(read), vars(read)) == (at, type(event), vars(event))
        for start, stop, limit in ((3, 9, 100), (3, None, 4), (end, None, 10), (0, 0, 5)):
            for inclusive in (True, False):
                asked = {"start": start, "limit": limit, "stop": stop,
                         "inclusive_of_start": inclusive}
                assert ([n.id for n in runtime.store.recorder.select_notifications(**asked)]
                        == [n.id for n in log.recorder.select_notifications(**asked)])
        step = next(e for _, e in decode(log, ours) if type(e).__name__ == "StepOpened")
        assert log.plan_of_step(step.originator_id) == runtime.store.plan_of_step(
            step.originator_id) == "auth"
        assert log.plan_of_step("01NOSUCHSTEP") is None
        assert log.newest_event_time() == runtime.store.newest_event_time()
        assert EventStore.name == STORE_NAME
    finally:
        log.close()


def test_a_reading_answers_as_the_runtime(store: tuple[str, Runtime], clock: FakeClock) -> None:
    db, runtime = store
    reading = Reading(db, clock)
    try:
        assert plain_answers.ready(reading, "auth") == plain_answers.ready(runtime, "auth")
        assert plain_answers.plans(reading) == plain_answers.plans(runtime)
        assert reading.reads.position == runtime.reads.position
    finally:
        reading.close()


def test_a_reading_resumes_from_the_checkpoint_a_runtime_saved(
        store: tuple[str, Runtime], clock: FakeClock) -> None:
    db, runtime = store
    assert runtime.reads.checkpoint()
    checkpointed = runtime.reads.position
    runtime.ledger.start_session("after the checkpoint")
    reading = Reading(db, clock)
    try:
        assert reading.reads.resume() == checkpointed > 0
        assert reading.reads.position == runtime.reads.position  # the rest folded on
        assert plain_answers.ready(reading, "auth") == plain_answers.ready(runtime, "auth")
    finally:
        reading.close()


@pytest.mark.parametrize(("tampering", "believed"), [
    ("UPDATE readmodel_checkpoints SET state = "
     "CAST(replace(CAST(state AS TEXT), 'Auth', 'Evil') AS BLOB)", False),  # its MAC fails
    ("UPDATE tracking SET notification_id = 'x'", False),  # a position that is no number
    # The same bytes stored as text (not valid UTF-8): read as the bytes they are.
    ("UPDATE readmodel_checkpoints SET state = CAST(state AS TEXT)", True),
])
def test_a_tampered_checkpoint_is_ignored_and_the_log_folded(
        store: tuple[str, Runtime], clock: FakeClock, tampering: str, believed: bool) -> None:
    db, runtime = store
    assert runtime.reads.checkpoint()
    with sqlite3.connect(checkpoint_path(db)) as views:
        views.execute(tampering)
    reading = Reading(db, clock)
    again = open_runtime(db, clock=clock, checkpoints=True)  # the library's way, the same
    try:
        resumed = reading.reads.resume()
        assert resumed == again.reads.resume() == (runtime.reads.position if believed else 0)
        assert plain_answers.plans(reading) == plain_answers.plans(runtime)
    finally:
        reading.close()
        again.close()


def test_reading_creates_no_file_and_writes_nothing(store: tuple[str, Runtime],
                                                    tmp_path: Path) -> None:
    db, _ = store
    missing = tmp_path / "elsewhere" / "ledger.sqlite"
    assert open_reading(str(missing)) is None
    assert not missing.parent.exists()
    assert open_reading("memory") is None
    assert open_reading("postgresql://postgres@127.0.0.1:5432/test") is None
    checkpoint_path(db).unlink()  # no checkpoints yet: the reading makes no file for them
    reading = open_reading(db)
    assert reading is not None
    try:
        assert plain_answers.plans(reading)
        assert reading.reads.resumed_from == 0
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reading.log._connection.execute("DELETE FROM stored_events")
    finally:
        reading.close()
    assert not checkpoint_path(db).exists()


def test_a_store_written_in_another_form_is_left_to_the_library(
        store: tuple[str, Runtime], monkeypatch: pytest.MonkeyPatch) -> None:
    db, _ = store
    monkeypatch.setenv("COMPRESSOR_TOPIC", "zlib")
    assert open_reading(db) is None
    monkeypatch.delenv("COMPRESSOR_TOPIC")
    monkeypatch.setenv("PLANLEDGER_CIPHER_TOPIC", "eventsourcing.cipher:AESCipher")
    assert open_reading(db) is None
    monkeypatch.delenv("PLANLEDGER_CIPHER_TOPIC")
    monkeypatch.setenv("PLANLEDGER_SQLITE_LOCK_TIMEOUT", "soon")  # the store's opening words it
    assert open_reading(db) is None
    monkeypatch.setenv("PLANLEDGER_SQLITE_LOCK_TIMEOUT", "2.5")
    reading = open_reading(db)
    assert reading is not None
    reading.close()


@pytest.mark.parametrize(("topic", "state"), [
    ("ledger.domain.events:NoSuchEvent", b'{"timestamp": 1}'),
    ("ledger.domain.events:SessionStarted", b"x\x9c\x03\x00\x00\x00\x00\x01"),  # zlib
    ("ledger.domain.events:SessionStarted", b"[1, 2]"),
    ("ledger.domain.events:SessionStarted", b'{"when": {"_type_": "pickle", "_data_": ""}}'),
    ("ledger.domain.events:SessionStarted", b'{"a": 1} trailing'),
    ("ledger.domain.events:SessionStarted", '{"a": 1}'),  # text, not bytes
    (7, b'{"a": 1}'),
])
def test_what_it_cannot_read_as_the_library_does_it_refuses(
        tmp_path: Path, topic: object, state: object) -> None:
    db = tmp_path / "odd.sqlite"
    with sqlite3.connect(db) as made:
        made.execute("CREATE TABLE stored_events (originator_id TEXT, originator_version "
                     "INTEGER, topic TEXT, state BLOB, PRIMARY KEY (originator_id, "
                     "originator_version))")
        made.execute("INSERT INTO stored_events VALUES ('s', 1, ?, ?)", (topic, state))
    log = FileLog(db)
    try:
        with pytest.raises(Unreadable):
            decode(log, page_after(log, 0))
    finally:
        log.close()
