"""What a caller attaches to a command (`Ledger.execute(command, attach)`): extra facts land
in the same transaction as the outcome that answers it, or not at all."""

from dataclasses import dataclass
from datetime import datetime

import pytest

from planledger.api.runtime import Runtime
from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.execution import Outcome
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
    seen: list[Outcome[object]] = []

    def attach(outcome: Outcome[object]) -> list[Note]:
        seen.append(outcome)
        return [_note(runtime, "claimed")]

    grant = runtime.ledger.execute(c.Claim(steps[4], session.id), attach)
    stored = list(runtime.store.stream("note:x"))
    assert [n.text for n in stored] == ["claimed"]
    assert type(seen[0].decision.events[0]).__name__ == "StepClaimed"
    assert seen[0].result == grant  # the attachment sees the answer it rides with


def test_decision_does_not_land_when_its_rider_event_conflicts(runtime: Runtime) -> None:
    steps = seed_auth_refresh(runtime.ledger)
    session = runtime.ledger.start_session("a")
    runtime.store.append([_note(runtime, "first")])  # type: ignore[list-item]

    with pytest.raises(errors.Contention):
        runtime.ledger.execute(c.Claim(steps[4], session.id),
                               lambda outcome: [_note(runtime, "second")])
    assert runtime.store.step(steps[4]).status == "open"
    assert [n.text for n in runtime.store.stream("note:x")] == ["first"]


def test_read_model_ignores_rider_events(runtime: Runtime) -> None:
    steps = seed_auth_refresh(runtime.ledger)
    runtime.ledger.execute(c.StartSession("b"), lambda outcome: [_note(runtime, "s")])
    assert steps[4] in runtime.reads.ready(runtime.store.step(steps[4]).plan)
