"""FollowedStates: which kept states a command may trust without reading again."""

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from planledger.ledger.followed import Appended, FollowedStates


@dataclass(frozen=True)
class State:
    version: int


@dataclass(frozen=True)
class Event:
    originator_id: str
    originator_version: int


def _bump(known: State | None, events: list[Any]) -> State:
    return State(events[-1].originator_version) if known is None else replace(
        known, version=events[-1].originator_version)


def _folds(known: Any, event: Appended) -> Callable[[Any, list[Any]], Any] | None:
    return None if event.originator_id.startswith("plan") else _bump


def _followed(position: int, **states: int) -> FollowedStates:
    followed = FollowedStates(size=10)
    followed.catch_up(position, lambda after, upto: [])
    for stream, version in states.items():
        followed.put(stream, State(version))
    return followed


def test_streams_appended_elsewhere_are_stale_and_the_rest_trusted() -> None:
    followed = _followed(5, a=1, b=2)
    asked: list[tuple[int, int]] = []

    followed.catch_up(8, lambda after, upto: asked.append((after, upto)) or ["b", "c"])

    assert asked == [(5, 8)]
    assert followed.get("a") == State(1)
    assert followed.get("b") is None
    followed.put("b", State(3))
    assert followed.get("b") == State(3)


def test_far_behind_or_a_shrunk_log_forgets_everything_unread() -> None:
    for top in (5 + 11, 4):  # more appended than it keeps; a log put back from a copy
        followed = _followed(5, a=1)
        followed.catch_up(top, lambda after, upto: (_ for _ in ()).throw(AssertionError))
        assert followed.get("a") is None
        assert followed.position == top


def test_own_appends_fold_onto_states_at_the_version_before_and_drop_the_rest() -> None:
    followed = _followed(5, a=1, b=1, plan=4)

    followed.committed([Event("a", 2), Event("b", 3), Event("plan", 5), Event("new", 1)],
                       position=9, fold_for=_folds)

    assert followed.position == 9
    assert followed.get("a") == State(2)
    assert followed.get("b") is None  # it missed version 2: read it again
    assert followed.get("plan") is None  # not folded here
    assert followed.get("new") == State(1)


def test_the_least_recently_used_state_goes_first() -> None:
    followed = FollowedStates(size=2)
    followed.catch_up(0, lambda after, upto: [])
    followed.put("a", State(1))
    followed.put("b", State(1))
    followed.get("a")
    followed.put("c", State(1))

    assert [followed.get(s) is not None for s in "abc"] == [True, False, True]
