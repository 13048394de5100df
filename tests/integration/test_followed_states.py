"""SQLite: commands read their streams from states that follow the log (ledger.followed).
What another process appends must show in the next command; what nothing moved is not
read again."""

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain import errors
from tests.support import OPERATOR
from tests.support.fakes import EPOCH, FakeClock, SequentialIds


@pytest.fixture
def other(db: str, clock: FakeClock, file_runtime: Runtime) -> Iterator[Runtime]:
    """A second store on the same file: another process, as far as the first can tell."""
    rt = open_runtime(db, clock=clock, ids=SequentialIds(EPOCH + timedelta(days=1)))
    yield rt
    rt.close()


def _warm(rt: Runtime, steps: int = 2) -> tuple[list[str], str]:
    """A plan whose first step one session has claimed and completed, so the session, the
    plan and that step are all followed."""
    _, ids = rt.ledger.create_plan("p", "P", steps=[NewStep(f"s{i}") for i in range(steps)],
        actor=OPERATOR)
    session = rt.ledger.start_session("a").id
    rt.ledger.claim(ids[0], session)
    rt.ledger.complete(ids[0], session)
    return list(ids), session


def test_a_session_ended_by_another_process_refuses_the_next_claim(
    file_runtime: Runtime, other: Runtime
) -> None:
    (_, second), session = _warm(file_runtime)

    other.ledger.end_session(session)

    with pytest.raises(errors.SessionClosed):
        file_runtime.ledger.claim(second, session)


def test_a_step_claimed_by_another_process_bounces_with_its_holder(
    file_runtime: Runtime, other: Runtime
) -> None:
    (first, _), session = _warm(file_runtime)
    file_runtime.ledger.reopen(first, OPERATOR)
    rival = other.ledger.start_session("b").id
    other.ledger.claim(first, rival)

    with pytest.raises(errors.AlreadyClaimed) as bounced:
        file_runtime.ledger.claim(first, session)
    assert bounced.value.holder == rival


def test_a_dependency_added_by_another_process_blocks_the_next_claim(
    file_runtime: Runtime, other: Runtime
) -> None:
    (_, second, third), session = _warm(file_runtime, steps=3)

    other.ledger.declare_dependencies(second, [third], actor=OPERATOR)

    with pytest.raises(errors.Blocked):
        file_runtime.ledger.claim(second, session)


def test_when_nothing_moved_a_command_reads_no_stream_again(
    file_runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    (first, _), session = _warm(file_runtime)
    reads: list[Any] = []
    recorder = file_runtime.store.recorder
    select = recorder.select_events
    monkeypatch.setattr(recorder, "select_events",
                        lambda *a, **k: reads.append(a) or select(*a, **k))

    file_runtime.ledger.reopen(first, OPERATOR)
    file_runtime.ledger.claim(first, session)
    file_runtime.ledger.complete(first, session)

    assert reads == []


def test_a_command_reads_again_only_what_another_process_moved(
    file_runtime: Runtime, other: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    (first, _), session = _warm(file_runtime)
    file_runtime.ledger.reopen(first, OPERATOR)
    other.ledger.start_session("b")  # a stream the first store never read
    other.ledger.list_ready("p", session)  # moves the session the first store follows
    reads: list[str] = []
    recorder = file_runtime.store.recorder
    select = recorder.select_events
    monkeypatch.setattr(recorder, "select_events",
                        lambda stream, **k: reads.append(stream) or select(stream, **k))

    file_runtime.ledger.claim(first, session)

    assert reads == [session]
    assert file_runtime.store.session(session).version == other.store.session(session).version
