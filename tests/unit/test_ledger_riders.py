"""The rider hook: extra events land in the same transaction as a decision, or not at all."""

from dataclasses import dataclass
from datetime import datetime

import pytest

from planledger.api.runtime import Runtime
from planledger.ledger.domain import errors
from planledger.ledger.domain.claims import Decision
from planledger.ledger.riders import riding
from tests.support.seed import seed_auth_refresh


@dataclass(frozen=True)
class Note:
    """A stand-in for the API's idempotency record: not a ledger event."""

    originator_id: str
    originator_version: int
    timestamp: datetime
    text: str


def _note(runtime: Runtime, text: str) -> Note:
    return Note("note:x", 1, runtime.ledger.clock.now(), text)


def test_rider_event_is_appended_with_the_decision(runtime: Runtime) -> None:
    steps = seed_auth_refresh(runtime.ledger)
    session = runtime.ledger.start_session("a")
    seen: list[Decision] = []

    def rider(decision: Decision) -> list[Note]:
        seen.append(decision)
        return [_note(runtime, "claimed")]

    with riding(rider):
        runtime.ledger.claim(steps[4], session.id)
    stored = list(runtime.store.stream("note:x"))
    assert [n.text for n in stored] == ["claimed"]
    assert type(seen[0].events[0]).__name__ == "StepClaimed"


def test_decision_does_not_land_when_its_rider_event_conflicts(runtime: Runtime) -> None:
    steps = seed_auth_refresh(runtime.ledger)
    session = runtime.ledger.start_session("a")
    runtime.store.append([_note(runtime, "first")])  # type: ignore[list-item]

    with riding(lambda decision: [_note(runtime, "second")]), pytest.raises(errors.Contention):
        runtime.ledger.claim(steps[4], session.id)
    assert runtime.store.step(steps[4]).status == "open"
    assert [n.text for n in runtime.store.stream("note:x")] == ["first"]


def test_read_model_ignores_rider_events(runtime: Runtime) -> None:
    steps = seed_auth_refresh(runtime.ledger)
    with riding(lambda decision: [_note(runtime, "s")]):
        runtime.ledger.start_session("b")
    assert steps[4] in runtime.reads.ready(runtime.store.step(steps[4]).plan)
