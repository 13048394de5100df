"""Telling a rewound log from the first row read at a read model's position
(projections.rewind): pure, so every case is one call."""

from dataclasses import dataclass

from planledger.projections.rewind import Folded, LogRewound, folded, lost


@dataclass(frozen=True)
class Row:
    id: int
    originator_id: str
    originator_version: int


LAST = Folded(7, "step-a", 3)


def test_a_model_that_folded_nothing_has_nothing_to_lose() -> None:
    assert lost(0, None, None) is None
    assert lost(0, None, Row(1, "step-a", 1)) is None


def test_the_same_event_still_at_the_position_is_no_rewind() -> None:
    assert lost(7, LAST, Row(7, "step-a", 3)) is None


def test_a_log_that_ends_before_the_position_was_rewound() -> None:
    assert lost(7, LAST, None) == "the log ends before position 7"


def test_a_later_event_where_the_folded_one_was_is_a_rewind_though_the_log_is_longer() -> None:
    # New events after a failover may take positions higher than the lost ones.
    assert lost(7, LAST, Row(40, "step-b", 1)) == "the log holds no event at position 7"


def test_another_event_at_the_same_position_is_a_rewind() -> None:
    # ... or the very positions the lost events had.
    assert lost(7, LAST, Row(7, "step-a", 2)) == (
        "position 7 holds step-a version 2, not step-a version 3")
    assert lost(7, LAST, Row(7, "session-x", 3)) is not None


def test_a_position_known_without_its_event_is_checked_for_an_event_there_only() -> None:
    # After a checkpoint is restored the model knows its position, not which event it was.
    assert lost(7, None, Row(7, "anything", 1)) is None
    assert lost(7, Folded(5, "step-a", 2), Row(7, "anything", 1)) is None
    assert lost(7, None, Row(9, "anything", 1)) is not None


def test_the_folded_identity_is_taken_from_the_row() -> None:
    assert folded(Row(7, "step-a", 3)) == LAST


def test_a_rewind_names_why_and_where_the_model_goes_on() -> None:
    rewound = LogRewound(5, "the log ends before position 7")
    assert rewound.position == 5
    assert str(rewound) == ("the log was rewound (the log ends before position 7); the read "
                            "model is folded again, up to position 5")
