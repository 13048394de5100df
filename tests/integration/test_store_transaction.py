"""SQLite: a command's reads and append share one transaction: all of it lands, or none."""

import threading
from datetime import timedelta
from pathlib import Path

import pytest

from planledger.api.cli.audit import store_entries
from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.chain import Verified, verify
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import StepId
from tests.support import OPERATOR
from tests.support.fakes import FakeClock


class Boom(Exception):
    pass


def _claimed(rt: Runtime, step: StepId, session: str, version: int) -> ev.StepClaimed:
    now = rt.ledger.clock.now()
    return ev.StepClaimed(step, version, now, session, fence=1, lease_seconds=60,
                          expires_at=now + timedelta(seconds=60))


def test_a_block_that_raises_after_its_append_leaves_no_trace(file_runtime: Runtime) -> None:
    runtime = file_runtime
    _, (step,) = runtime.ledger.create_plan("p", "P", steps=[NewStep("job")], actor=OPERATOR)
    session = runtime.ledger.start_session("a").id
    before = runtime.store.step(step)

    with pytest.raises(Boom), runtime.store.transaction():
        runtime.store.append([_claimed(runtime, step, session, before.version + 1)])
        raise Boom

    # Nothing stored, nothing cached: the step reads as before, and the same version is
    # free for the next claim, whose seal chains onto the stored event, not the lost one.
    assert runtime.store.step(step) == before
    assert runtime.ledger.claim(step, session).fence == 1
    assert [type(e).__name__ for e in runtime.store.stream(step)] == [
        "StepOpened", "StepClaimed"]
    assert isinstance(verify(store_entries(runtime.store)), Verified)


def test_nested_blocks_join_the_outer_one(file_runtime: Runtime) -> None:
    runtime = file_runtime
    _, (first, second) = runtime.ledger.create_plan(
        "p", "P", steps=[NewStep("one"), NewStep("two")], actor=OPERATOR)
    session = runtime.ledger.start_session("a").id

    with pytest.raises(Boom), runtime.store.transaction():
        runtime.store.append([_claimed(runtime, first, session, 2)])
        with runtime.store.transaction():
            runtime.store.append([_claimed(runtime, second, session, 2)])
        raise Boom  # after the inner block ended: it committed nothing of its own

    assert runtime.store.step(first).holder is None
    assert runtime.store.step(second).holder is None


def test_a_writer_waits_for_an_open_block_so_what_the_block_read_stays_true(
    tmp_path: Path,
) -> None:
    """SQLite: the block holds the write lock from its start. Another process's claim,
    released while the block is between its read and its append, lands after it."""
    db, clock = str(tmp_path / "ledger.sqlite"), FakeClock()
    ours, theirs = open_runtime(db, clock=clock), open_runtime(db, clock=clock)
    _, (step,) = ours.ledger.create_plan("p", "P", steps=[NewStep("job")], actor=OPERATOR)
    a, b = ours.ledger.start_session("a").id, ours.ledger.start_session("b").id
    outcome: list[str] = []
    rival_started = threading.Event()

    def rival() -> None:
        rival_started.set()
        try:
            theirs.ledger.claim(step, b)
            outcome.append("b won")
        except Exception as error:
            outcome.append(type(error).__name__)

    thread = threading.Thread(target=rival)
    try:
        with ours.store.transaction():
            read = ours.store.step(step)
            assert read.holder is None
            thread.start()
            assert rival_started.wait(10)
            # The rival is now blocked on the lock (or not yet there): either way it
            # cannot append between our read and our append, so ours cannot conflict.
            ours.store.append([_claimed(ours, step, a, read.version + 1)])
    finally:
        if thread.ident is not None:
            thread.join(30)  # before the stores close under it
        ours.close()
        theirs.close()
    assert outcome == ["AlreadyClaimed"]
    reader = open_runtime(db, clock=clock)
    assert reader.store.step(step).holder == a
    reader.close()


def test_an_id_asked_as_the_wrong_kind_after_its_stream_moved_elsewhere_is_unknown(
    tmp_path: Path,
) -> None:
    """A session id asked as a step, once another process has appended to that session:
    refused as an unknown step, and what this process knows of the session stays sound."""
    db, clock = str(tmp_path / "ledger.sqlite"), FakeClock()
    ours, theirs = open_runtime(db, clock=clock), open_runtime(db, clock=clock)
    try:
        ours.ledger.create_plan("p", "P", steps=[NewStep("job")], actor=OPERATOR)
        session = ours.ledger.start_session("a").id
        assert ours.store.session(session).version == 1  # cached here
        theirs.ledger.list_ready("p", session)  # the session's stream moves, elsewhere
        with pytest.raises(errors.UnknownStep):
            ours.store.step(StepId(session))
        assert ours.store.session(session).version == 2
    finally:
        ours.close()
        theirs.close()


def test_closing_the_store_lets_go_of_the_file(tmp_path: Path, clock: FakeClock) -> None:
    """Every connection closes, the writer's too: SQLite then folds its write-ahead log
    into the file and removes it, so the file alone can be copied or moved."""
    db = tmp_path / "ledger.sqlite"
    runtime = open_runtime(str(db), clock=clock)
    _, (step,) = runtime.ledger.create_plan("p", "P", steps=[NewStep("job")], actor=OPERATOR)
    runtime.ledger.claim(step, runtime.ledger.start_session("a").id)
    assert (tmp_path / "ledger.sqlite-wal").exists()

    runtime.close()

    # The secret beside it (infra.secret) signs the log's head: it goes with the file.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.sqlite",
                                                         "ledger.sqlite.secret"]
