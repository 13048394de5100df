"""An event whose shape changed is upcast as it is read (`class_version` and
`upcast_vN_vM`, the eventsourcing library's convention), by ledger.stored_form's
`event_from`, which both readers of a log use: the library's mapper (ledger.sealing) and
the file reader that runs without it (infra.sqlite_reading).

No event of the ledger has changed shape yet: every change so far added a field with a
default (ledger.domain.events.LateFields), which an event stored before simply lacks. This
holds the mechanism for the first one that does, with a type of the test's own.
"""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

from planledger.ledger.stored_form import event_from

WHEN = datetime(2026, 12, 7, tzinfo=UTC)


@dataclass(frozen=True)
class LeaseGranted:
    """Shaped as a ledger event is (not one: the ledger's tests list every LedgerEvent
    type). Version 1 stored `seconds`; version 2 renamed it `lease_seconds`; version 3
    added `why`, which events stored before it did not have."""

    originator_id: str
    originator_version: int
    timestamp: datetime
    session_id: str | None
    lease_seconds: int
    why: str

    class_version: ClassVar[int] = 3

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        state["lease_seconds"] = state.pop("seconds")

    @staticmethod
    def upcast_v2_v3(state: dict[str, Any]) -> None:
        state["why"] = "granted before reasons were kept"


def test_an_event_stored_by_the_first_version_is_upcast_through_each_step() -> None:
    stored = {"timestamp": WHEN, "session_id": "s", "seconds": 900}  # no class_version: 1
    event = event_from(LeaseGranted, stored, "step-1", 4, LeaseGranted.class_version)
    assert (event.lease_seconds, event.why) == (900, "granted before reasons were kept")
    assert (event.originator_id, event.originator_version) == ("step-1", 4)
    assert "seconds" not in vars(event) and "class_version" not in vars(event)


def test_an_event_stored_by_a_middle_version_starts_from_its_own() -> None:
    stored = {"timestamp": WHEN, "session_id": "s", "lease_seconds": 60, "class_version": 2}
    event = event_from(LeaseGranted, stored, "step-1", 2, LeaseGranted.class_version)
    assert (event.lease_seconds, event.why) == (60, "granted before reasons were kept")


def test_an_event_stored_by_the_current_version_is_read_as_stored() -> None:
    stored = {"timestamp": WHEN, "session_id": "s", "lease_seconds": 30, "why": "asked",
              "class_version": 3}
    event = event_from(LeaseGranted, stored, "step-1", 1, LeaseGranted.class_version)
    assert (event.lease_seconds, event.why) == (30, "asked")
