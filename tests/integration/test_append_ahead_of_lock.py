"""SQLite: an append is encoded, and the chains it starts are sealed, before it takes the
write lock; only its insert waits for the lock. What it seals still chains, and a refused
append leaves nothing behind, not even a noted hash."""

import threading
from collections.abc import Sequence
from typing import Any

import pytest
from eventsourcing.persistence import EventStore as LibraryEventStore

from planledger.api.cli.audit import store_entries
from planledger.api.runtime import Runtime, open_runtime
from planledger.infra.persistence import open_event_store, persistence_for
from planledger.ledger.application import NewStep
from planledger.ledger.chain import Verified, hash_of, verify
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PlanSlug, plan_stream
from planledger.ledger.sealing import Encoded, Heads, SealingEventStore
from planledger.ledger.storage import store_settings
from planledger.ledger.store import EventStore
from tests.support import OPERATOR
from tests.support.fakes import EPOCH, FakeClock, SequentialIds


class NotedIds(SequentialIds):
    """Sequential ids that keep a list of those given out."""

    def __init__(self) -> None:
        super().__init__()
        self.given: list[str] = []

    def new_id(self) -> str:
        given = super().new_id()
        self.given.append(given)
        return given


class PausingEvents(SealingEventStore):
    """Stops after encoding an append of more than one event until the test lets it go."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.encoded, self.go = threading.Event(), threading.Event()

    def encode(self, domain_events: Sequence[Any], *, ahead: bool = False) -> Encoded:
        encoded = super().encode(domain_events, ahead=ahead)
        if len(domain_events) > 1:
            self.encoded.set()
            assert self.go.wait(timeout=30)
        return encoded


class PausingStore(EventStore):
    def construct_event_store(self) -> LibraryEventStore[str]:
        return PausingEvents(self.mapper, self.recorder, Heads())


def _started(session: str) -> ev.SessionStarted:
    return ev.SessionStarted(session, 1, EPOCH, session_id=session, name=None)


def _sealing(runtime: Runtime) -> SealingEventStore:
    events = runtime.store.events
    assert isinstance(events, SealingEventStore)
    return events


def test_another_writer_appends_while_a_large_append_is_encoded(db: str) -> None:
    store = PausingStore(store_settings(db), persistence_for(db))
    events = store.events
    assert isinstance(events, PausingEvents)
    large = threading.Thread(
        target=lambda: store.append([_started(f"many-{n:03}") for n in range(100)]))
    large.start()
    try:
        assert events.encoded.wait(timeout=30)
        # Refused at once (WouldWait) if the large append held the write lock already.
        with store.without_waiting():
            store.append([_started("one")])
    finally:
        events.go.set()
        large.join()

    checked = verify(store_entries(store))
    assert isinstance(checked, Verified)
    assert (checked.events, checked.streams) == (101, 101)
    assert next(store_entries(store)).stream == "one"  # it landed first
    store.close()


def test_one_append_that_starts_a_stream_and_extends_another_seals_both(db: str) -> None:
    store = open_event_store(db)
    store.append([_started("old")])

    store.append([_started("new"), ev.SessionEnded("old", 2, EPOCH, session_id="old",
                                                   released=[])])

    checked = verify(store_entries(store))
    assert isinstance(checked, Verified)
    assert (checked.events, checked.streams) == (3, 2)
    store.close()


def test_a_plan_whose_slug_is_taken_writes_nothing_and_notes_no_chain_hash(
    db: str, clock: FakeClock
) -> None:
    ids = NotedIds()
    runtime = open_runtime(db, clock=clock, ids=ids)
    runtime.ledger.create_plan("p", "P", steps=[NewStep("first")], actor=OPERATOR)
    stored = [e.state for e in store_entries(runtime.store)]
    ids.given.clear()

    with pytest.raises(errors.PlanExists):
        runtime.ledger.create_plan("p", "Again", steps=[NewStep("a"), NewStep("b")],
                                   actor=OPERATOR)

    assert [e.state for e in store_entries(runtime.store)] == stored
    heads = _sealing(runtime).heads
    assert len(ids.given) == 2
    for step in ids.given:
        assert heads.get(step, 1) is None
    plan = plan_stream(PlanSlug("p"))
    assert heads.get(plan, 2) == hash_of(stored[1])  # the stored plan's, at its version 2
    assert heads.get(plan, 3) is None  # the refused plan's third event was never stored
    _, (step,) = runtime.ledger.create_plan("q", "Q", steps=[NewStep("next")], actor=OPERATOR)
    runtime.ledger.claim(step, runtime.ledger.start_session("a").id)
    assert isinstance(verify(store_entries(runtime.store)), Verified)
    runtime.close()


def test_the_last_steps_of_a_plan_longer_than_a_turn_are_claimed_without_a_read(
    file_runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new plan's steps are folded into the followed states in turns (ledger.turns)."""
    _, steps = file_runtime.ledger.create_plan(
        "p", "P", steps=[NewStep(f"s{i}") for i in range(150)], actor=OPERATOR)
    session = file_runtime.ledger.start_session("a").id
    file_runtime.ledger.claim(steps[0], session)  # reads the plan, which is not followed
    reads: list[str] = []
    recorder = file_runtime.store.recorder
    select = recorder.select_events

    def noted_select(stream: str, **kwargs: Any) -> Any:
        reads.append(stream)
        return select(stream, **kwargs)

    monkeypatch.setattr(recorder, "select_events", noted_select)

    file_runtime.ledger.claim(steps[-1], session)
    file_runtime.ledger.claim(steps[70], session)

    assert reads == []
