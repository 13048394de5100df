"""SQLite: a block run `without_waiting` (an event loop running a command itself) refuses,
having written nothing, where its first transaction would wait for the write lock; once
a transaction has begun, the rest wait as usual. And commands that ask the read model do
so before they take the write lock, not while holding it."""

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import OperationalError

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.application import Ledger, NewStep
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.ports import CandidateView
from planledger.ledger.storage import SQLITE_LOCK_TIMEOUT_VAR
from planledger.ledger.store import WouldWait
from tests.support import OPERATOR
from tests.support.fakes import FakeClock
from tests.support.sqlite_lock import write_lock_held


def _plan(runtime: Runtime, steps: int = 1) -> tuple[list[StepId], str]:
    _, ids = runtime.ledger.create_plan("p", "P", steps=[NewStep(f"s{i}") for i in range(steps)],
        actor=OPERATOR)
    return ids, runtime.ledger.start_session("a").id


def _position(runtime: Runtime) -> int:
    return runtime.store.recorder.max_notification_id() or 0


def test_a_command_that_would_wait_on_another_process_refuses_having_written_nothing(
    file_runtime: Runtime, db: str,
) -> None:
    (step,), session = _plan(file_runtime)
    before = _position(file_runtime)

    with write_lock_held(db), pytest.raises(WouldWait), file_runtime.store.without_waiting():
        file_runtime.ledger.claim(step, session)

    assert _position(file_runtime) == before
    assert file_runtime.store.step(step).holder is None
    with file_runtime.store.without_waiting():  # the lock is free: it runs here and now
        assert file_runtime.ledger.claim(step, session).fence == 1
    assert file_runtime.store.step(step).holder == session


def test_a_command_that_would_wait_on_this_process_refuses_too(file_runtime: Runtime) -> None:
    """A longer write on another thread of the same process holds the process's writer lock."""
    (first, second), session = _plan(file_runtime, 2)
    inside, leave = threading.Event(), threading.Event()

    def long_write() -> None:
        with file_runtime.store.transaction():
            file_runtime.ledger.claim(first, session)
            inside.set()
            leave.wait(30)

    writer = threading.Thread(target=long_write)
    writer.start()
    try:
        assert inside.wait(30)
        with pytest.raises(WouldWait), file_runtime.store.without_waiting():
            file_runtime.ledger.claim(second, session)
    finally:
        leave.set()
        writer.join(30)
    assert file_runtime.store.step(first).holder == session
    assert file_runtime.store.step(second).holder is None


def test_once_a_transaction_has_begun_the_rest_wait_as_usual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Running the block again after a later refusal would repeat what it committed, so a
    later transaction waits (here until the store's lock timeout, one second)."""
    monkeypatch.setenv(SQLITE_LOCK_TIMEOUT_VAR, "1")
    db = str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db, clock=FakeClock())
    try:
        (first, second), session = _plan(runtime, 2)
        with runtime.store.without_waiting():
            runtime.ledger.claim(first, session)
            with write_lock_held(db), pytest.raises(OperationalError, match="locked"):
                runtime.ledger.claim(second, session)
        assert runtime.store.step(first).holder == session
        assert runtime.store.step(second).holder is None
    finally:
        runtime.close()


def test_a_refused_or_eager_command_leaves_its_connection_waiting_as_usual(
    file_runtime: Runtime, db: str,
) -> None:
    """The busy timeout is set to 0 for an eager BEGIN only: a connection left at 0 would
    fail every later write at once instead of waiting its turn."""
    (first, second), session = _plan(file_runtime, 2)
    with write_lock_held(db), pytest.raises(WouldWait), file_runtime.store.without_waiting():
        file_runtime.ledger.claim(first, session)
    with file_runtime.store.without_waiting():
        file_runtime.ledger.claim(second, session)
    recorder: Any = file_runtime.store.recorder
    # PLANLEDGER_SQLITE_LOCK_TIMEOUT's default, in ms
    assert recorder.file.busy_timeouts() == {30_000}


def test_reads_never_refuse(file_runtime: Runtime, db: str) -> None:
    (step,), _ = _plan(file_runtime)
    with write_lock_held(db), file_runtime.store.without_waiting():
        assert file_runtime.store.step(step).status == "open"


class LockProbingView(CandidateView):
    """The real read model, noting for each question whether SQLite's write lock was free
    while it answered (a read model's first answer can fold the whole log)."""

    def __init__(self, inner: CandidateView, db: str) -> None:
        self.inner, self.db = inner, db
        self.lock_free: list[bool] = []

    def _probe(self) -> None:
        probe = sqlite3.connect(self.db, isolation_level=None, timeout=0)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            self.lock_free.append(True)
        except sqlite3.OperationalError:
            self.lock_free.append(False)
        finally:
            probe.close()

    def held_by(self, session: SessionId) -> Sequence[StepId]:
        self._probe()
        return self.inner.held_by(session)

    def ready(self, plan: PlanSlug) -> Sequence[StepId]:
        self._probe()
        return self.inner.ready(plan)

    def claim_order(self, plan: PlanSlug) -> Sequence[StepId]:
        self._probe()
        return self.inner.claim_order(plan)

    def plans_with_key(self, key: str) -> Sequence[PlanSlug]:
        self._probe()
        return self.inner.plans_with_key(key)


def _probed_ledger(runtime: Runtime, db: str) -> tuple[Ledger, LockProbingView]:
    view = LockProbingView(runtime.reads, db)
    return Ledger(runtime.store, runtime.ledger.clock, runtime.ledger.ids, view), view


def test_a_recorded_ready_listing_reads_the_read_model_before_the_write_lock(
    file_runtime: Runtime, db: str,
) -> None:
    (step,), session = _plan(file_runtime)
    ledger, view = _probed_ledger(file_runtime, db)
    assert ledger.list_ready("p", session) == [step]
    assert view.lock_free == [True]


def test_a_session_end_first_asks_the_read_model_with_the_write_lock_free(
    file_runtime: Runtime, db: str,
) -> None:
    (step,), session = _plan(file_runtime)
    file_runtime.ledger.claim(step, session)
    ledger, view = _probed_ledger(file_runtime, db)
    assert ledger.end_session(session) == [step]
    assert view.lock_free[0] is True  # the catch-up; asked again inside, under the lock
