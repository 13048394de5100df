"""The git audit's rule (projections.git_audit) on claims folded from a real in-memory
ledger driven by a fake clock, and commits given as values: each reason a claim stops
holding, and each way trailers can fail to name a claim."""

from datetime import datetime, timedelta

from planledger.api.runtime import Runtime
from planledger.ledger import commands as c
from planledger.ledger.application import NewStep
from planledger.ledger.domain.evidence import Evidence
from planledger.ledger.domain.paths import PathSpec
from planledger.projections.claim_history import ClaimHistory, claim_history
from planledger.projections.git_audit import Commit, Finding, audit, paired
from planledger.projections.log import pages
from tests.support import OPERATOR
from tests.support.fakes import FakeClock


def _history(rt: Runtime) -> ClaimHistory:
    return claim_history(e for page in pages(rt.store) for e in page)


def _trailers(step: str, fence: int, session: str, ref: str = "p#1",
              ) -> tuple[tuple[str, str], ...]:
    return (("Planledger-Step", f"{ref} {step}"), ("Planledger-Fence", str(fence)),
            ("Planledger-Session", session))


def _judge(rt: Runtime, *commits: Commit) -> list[Finding]:
    return list(audit(commits, _history(rt), set).findings)


def _plan(rt: Runtime) -> str:
    _, (step,) = rt.ledger.create_plan("p", "P", steps=[
        NewStep("One", paths=(PathSpec("src/**"),))], actor=OPERATOR)
    return step


def _at(clock: FakeClock, seconds: float) -> datetime:
    return clock.now() + timedelta(seconds=seconds)


def test_a_commit_under_a_fence_granted_again_to_another_is_outside_its_claim(
    rt: Runtime, clock: FakeClock,
) -> None:
    step = _plan(rt)
    a, b = rt.ledger.start_session("A").id, rt.ledger.start_session("B").id
    rt.ledger.claim(step, a, lease_seconds=30)
    clock.advance(60)
    rt.ledger.claim(step, b, lease_seconds=600)  # fence 2: A's lapsed
    late = Commit("a" * 40, _at(clock, 10), _trailers(step, 1, a), ("src/x.py",))
    found = _judge(rt, late)
    assert [(f.kind, f.session) for f in found] == [("outside_claim", a),
                                                     ("into_reservation", a)]
    assert "stale fence" in found[0].text


def test_a_commit_after_its_session_ended_or_its_claim_was_released_is_outside_it(
    rt: Runtime, clock: FakeClock,
) -> None:
    step = _plan(rt)
    a = rt.ledger.start_session("A").id
    rt.ledger.claim(step, a, lease_seconds=600)
    clock.advance(5)
    rt.ledger.end_session(a)
    found = _judge(rt, Commit("b" * 40, _at(clock, 5), _trailers(step, 1, a)))
    assert [f.kind for f in found] == ["outside_claim"]
    assert "session ended" in found[0].text


def test_trailers_naming_another_session_or_another_number_name_no_claim(
    rt: Runtime, clock: FakeClock,
) -> None:
    step = _plan(rt)
    a, b = rt.ledger.start_session("A").id, rt.ledger.start_session("B").id
    rt.ledger.claim(step, a, lease_seconds=600)
    at = _at(clock, 5)
    found = _judge(rt, Commit("c" * 40, at, _trailers(step, 1, b)),
                   Commit("d" * 40, at, _trailers(step, 1, a, ref="p#4")),
                   Commit("e" * 40, at, _trailers(step, 1, a)))
    assert [(f.kind, f.commit[0]) for f in found] == [("unknown_claim", "c"),
                                                       ("unknown_claim", "d")]


def test_each_fence_pairs_with_the_step_before_it() -> None:
    trailers = [("Planledger-Step", "p#1 X"), ("Planledger-Fence", "2"),
                ("Planledger-Step", "p#2 Y"), ("Planledger-Step", "p#3 Z"),
                ("Planledger-Fence", "4"), ("Planledger-Fence", "5")]
    assert paired(trailers) == ([("p#1 X", "2"), ("p#3 Z", "4")], 2)


def test_a_submission_for_review_ends_the_claim_and_its_evidence_is_checked(
    rt: Runtime, clock: FakeClock,
) -> None:
    _, (step,) = rt.ledger.create_plan("p", "P", steps=[
        NewStep("One", review_required=True)], actor=OPERATOR)
    a = rt.ledger.start_session("A").id
    rt.ledger.claim(step, a, lease_seconds=600)
    clock.advance(5)
    rt.ledger.execute(c.Complete(step, a, evidence=Evidence(commits=("abcdef1",))))
    history = _history(rt)
    report = audit([Commit("f" * 40, _at(clock, 5), _trailers(step, 1, a))], history,
                   lambda shas: set())
    assert [(f.kind, f.commit) for f in report.findings] == [
        ("outside_claim", "f" * 40), ("evidence_missing", "abcdef1")]
    assert "submitted for review" in report.findings[0].text
