"""What an applied event tells the waiters (projections.wakeups.tell), on plain events
folded into a view: how many steps it may have freed, and when a lease it set ends."""

import threading
from datetime import datetime
from pathlib import Path

from planledger.api.runtime import open_runtime
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PlanSlug
from planledger.projections.view import LedgerView
from planledger.projections.wakeups import EVERY_WAITER, Wakeups, tell
from tests.support.given import PLAN, _numbered, claimed, completed, dropped, from_now, plan, step


class Told:
    """A `Signals` that writes down what it is told."""

    def __init__(self) -> None:
        self.said: list[tuple[str, PlanSlug | None, object]] = []

    def freed(self, plan: PlanSlug | None, count: int) -> None:
        self.said.append(("freed", plan, count))

    def leased(self, plan: PlanSlug | None, until: datetime) -> None:
        self.said.append(("leased", plan, until))


def told_by(given: list[ev.LedgerEvent], when: list[ev.LedgerEvent]) -> list[object]:
    """What the `when` events tell, applied after the `given` ones."""
    view, told = LedgerView(), Told()
    numbered = _numbered([*given, *when])
    view.apply_all(enumerate(numbered[:len(given)], start=1))
    for position, event in enumerate(numbered[len(given):], start=len(given) + 1):
        view.apply(event, position)
        tell(told, event, view)
    view.settle()
    return list(told.said)


def test_a_completed_step_frees_the_dependents_it_no_longer_blocks_and_no_others() -> None:
    given = [plan(), *step("a"), *step("b"), *step("x", after=["a"]),
             *step("y", after=["a"]), *step("z", after=["a", "b"]), claimed("a", "s1")]

    assert told_by(given, [completed("a", "s1")]) == [("freed", PLAN, 2)]  # x, y; z waits on b


def test_a_completion_that_unblocks_nothing_tells_nobody() -> None:
    given = [plan(), *step("a"), *step("b"), claimed("a", "s1"), claimed("b", "s2")]

    assert told_by(given, [completed("a", "s1")]) == []


def test_the_completion_that_finishes_a_plan_tells_every_waiter() -> None:
    given = [plan(), *step("a"), *step("b"), claimed("a", "s1"), claimed("b", "s2")]

    assert told_by(given, [completed("a", "s1"), dropped("b")]) == [
        ("freed", PLAN, EVERY_WAITER)]


def test_a_dropped_step_frees_its_dependents() -> None:
    given = [plan(), *step("a"), *step("x", after=["a"])]

    assert told_by(given, [dropped("a")]) == [("freed", PLAN, 1)]


def test_a_new_step_and_a_release_each_may_free_one() -> None:
    given = [plan(), *step("a"), claimed("a", "s1")]
    released = ev.StepReleased("a", 0, from_now(0), "s1", actor="s1", fence=1, holder="s1",
                               reason="released")

    assert told_by(given, [*step("b"), released]) == [("freed", PLAN, 1), ("freed", PLAN, 1)]


def test_a_claim_tells_when_its_lease_ends() -> None:
    given = [plan(), *step("a")]

    assert told_by(given, [claimed("a", "s1", expires_in=30)]) == [
        ("leased", PLAN, from_now(30))]


def test_a_runtime_closing_stops_its_waiting_follower_before_its_store(tmp_path: Path) -> None:
    """The follower reads the store from its own thread: left running, it would read a
    closed SQLite connection (a test process once crashed so)."""
    runtime = open_runtime(str(tmp_path / "ledger.sqlite"))
    wakeups = Wakeups(runtime.reads, Told(), interval=0.01)
    wakeups.watch()
    wakeups.start()
    following = [t for t in threading.enumerate() if t.name == "wakeups"]
    assert following and all(t.is_alive() for t in following)

    runtime.close()

    assert not any(t.is_alive() for t in following)
