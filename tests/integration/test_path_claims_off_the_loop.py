"""A claim that must decide path overlaps never runs on the event loop: inside the
store's `without_waiting` (where api.http.running runs a short command on the loop) it
raises WouldWait before writing anything, and runs on a worker thread instead; and a
path check decides its overlaps outside the read model's lock, within a budget."""

from pathlib import Path

import pytest

from planledger.api.path_reads import check
from planledger.api.runtime import open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain.errors import InvalidInput
from planledger.ledger.domain.paths import PathSpec
from planledger.ledger.store import WouldWait
from tests.support import OPERATOR

HARD = "*" + ("a" * 15 + "*") * 15  # legal, and costly to compare with its like


def test_a_claim_with_paths_to_decide_is_refused_on_the_loop_and_runs_off_it(
        tmp_path: Path) -> None:
    runtime = open_runtime(str(tmp_path / "ledger.sqlite"))
    ledger = runtime.ledger
    a, b = ledger.start_session("a").id, ledger.start_session("b").id
    _, (held, wanted, plain) = ledger.create_plan("p", "P", steps=[
        NewStep("held", paths=(PathSpec("src/**"),)),
        NewStep("wanted", paths=(PathSpec("docs/**"),)),
        NewStep("plain")], actor=OPERATOR)
    ledger.claim(held, a)
    with pytest.raises(WouldWait), runtime.store.without_waiting():
        ledger.claim(wanted, b)
    assert runtime.store.step(wanted).holder is None  # nothing was written
    with runtime.store.without_waiting():
        assert ledger.claim(plain, b).fence == 1  # no paths to decide: on the loop
    assert ledger.claim(wanted, b).fence == 1  # on a worker thread, as the pool runs it
    assert runtime.store.step(wanted).holder == b
    runtime.close()


def test_a_check_of_many_hard_patterns_is_refused_within_its_budget(tmp_path: Path) -> None:
    runtime = open_runtime(str(tmp_path / "ledger.sqlite"))
    ledger = runtime.ledger
    holder = ledger.start_session("holder").id
    mine = tuple(PathSpec(f"{HARD}b{n}") for n in range(50))
    _, (step,) = ledger.create_plan("p", "P", steps=[NewStep("hard", paths=mine)],
                                    actor=OPERATOR)
    ledger.claim(step, holder)
    with pytest.raises(InvalidInput, match="too long"):
        check(runtime, patterns=[f"{HARD}c{n}" for n in range(100)])
    assert check(runtime, patterns=["docs/**"]).reserved == []  # plain ones still answer
    runtime.close()
