"""Evidence on completion, given plain events: what a completion carries into its event,
how every part of it is bounded, and the plan that requires every check to pass."""

import dataclasses

import pytest

from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.evidence import (
    MAX_CHECKS,
    MAX_COMMITS,
    MAX_EVIDENCE_CHARACTERS,
    Check,
    Evidence,
    check_evidence,
)
from planledger.ledger.domain.ids import SessionId, StepId
from planledger.ledger.domain.state import evolve_plan
from tests.support.given import claimed, given, plan, started, step

A = StepId("A")
S1, S2 = SessionId("S1"), SessionId("S2")
SHA = "9fceb02d0ae598e95dc970b74767f19372d61af8"
WORK = Evidence(commits=(SHA, "ABCDEF1"), branch="feature/evidence",
                pr="https://github.com/example/app/pull/31",
                checks=(Check("tests", "pass", "pytest -q", "383 passed"),
                        Check("lint", "fail", None, "2 findings")))


def _scene(*more: ev.LedgerEvent, require: bool = False) -> list[ev.LedgerEvent]:
    made = dataclasses.replace(plan(), require_checks_pass=True) if require else plan()
    return [started(S1), started(S2), made, *step(A), claimed(A, by=S1), *more]


def test_a_completion_keeps_its_evidence_in_its_event() -> None:
    then = given(*_scene()).when(c.Complete(A, S1, evidence=WORK))

    done = then.one(ev.StepCompleted)
    assert done.evidence == {
        "commits": [SHA, "abcdef1"], "branch": "feature/evidence",
        "pr": "https://github.com/example/app/pull/31",
        "checks": [{"name": "tests", "result": "pass", "command": "pytest -q",
                    "summary": "383 passed"},
                   {"name": "lint", "result": "fail", "command": None,
                    "summary": "2 findings"}]}
    assert Evidence.of_record(done.evidence) == check_evidence(WORK)


def test_a_completion_without_evidence_stores_no_evidence_field() -> None:
    done = given(*_scene()).when(c.Complete(A, S1, evidence=Evidence())).one(ev.StepCompleted)

    assert done.evidence is None and "evidence" not in vars(done)  # stored as before


def test_a_failed_check_does_not_refuse_completing_on_a_plan_that_does_not_require_it() -> None:
    then = given(*_scene()).when(c.Complete(A, S1, evidence=WORK))

    assert then.answer.status == "done"


def test_a_plan_that_requires_checks_to_pass_refuses_naming_the_failed_check() -> None:
    then = given(*_scene(require=True)).when(c.Complete(A, S1, evidence=WORK))

    refusal = then.refused(errors.CheckFailed)
    assert (refusal.check, then.events) == ("lint", [])
    assert str(refusal).startswith('check "lint" failed: plan p requires every check to pass')


def test_a_plan_that_requires_checks_to_pass_takes_passing_ones_and_none() -> None:
    scene = given(*_scene(require=True))
    passing = dataclasses.replace(WORK, checks=WORK.checks[:1])
    assert scene.when(c.Complete(A, S1, evidence=passing)).answer.status == "done"


def test_a_refused_holder_is_told_so_before_its_checks_are_judged() -> None:
    then = given(*_scene(require=True)).when(c.Complete(A, S2, evidence=WORK))

    then.refused(errors.NotHolder)


def test_a_plan_created_to_require_passing_checks_says_so() -> None:
    made = given(started(S1)).when(c.CreatePlan("strict", "Strict", S1,
                                                require_checks_pass=True))

    created = made.one(ev.PlanCreated)
    assert created.require_checks_pass is True and made.answer.plan.require_checks_pass
    lax = given(started(S1)).when(c.CreatePlan("lax", "Lax", S1)).one(ev.PlanCreated)
    assert "require_checks_pass" not in vars(lax)  # stored as plans were before
    assert evolve_plan(None, lax).require_checks_pass is False


@pytest.mark.parametrize(("evidence", "field"), [
    (Evidence(commits=("xyz1234",)), "evidence.commits[0]"),
    (Evidence(commits=(SHA, "abc12")), "evidence.commits[1]"),  # too short
    (Evidence(commits=("a" * 65,)), "evidence.commits[0]"),
    (Evidence(commits=("a" * 7,) * (MAX_COMMITS + 1)), "evidence.commits"),
    (Evidence(pr="javascript:alert(1)"), "evidence.pr"),
    (Evidence(pr="ftp://example.com/x"), "evidence.pr"),
    (Evidence(pr="https://"), "evidence.pr"),
    (Evidence(pr="https://example.com/a b"), "evidence.pr"),
    (Evidence(pr="https://example.com/" + "x" * 2_000), "evidence.pr"),
    (Evidence(branch="feature..x"), "evidence.branch"),
    (Evidence(branch="-rf"), "evidence.branch"),
    (Evidence(branch="a b"), "evidence.branch"),
    (Evidence(branch="x.lock"), "evidence.branch"),
    (Evidence(branch="topic/.hidden"), "evidence.branch"),
    (Evidence(branch="x" * 256), "evidence.branch"),
    (Evidence(checks=(Check("tests", "maybe"),)), "evidence.checks[0].result"),  # type: ignore[arg-type]
    (Evidence(checks=(Check("", "pass"),)), "evidence.checks[0].name"),
    (Evidence(checks=(Check("a\nb", "pass"),)), "evidence.checks[0].name"),
    (Evidence(checks=(Check("t", "pass", summary="x" * 1_001),)), "evidence.checks[0].summary"),
    (Evidence(checks=(Check("t", "pass", command="\x1b[2J"),)), "evidence.checks[0].command"),
    (Evidence(checks=(Check("t", "pass"),) * (MAX_CHECKS + 1)), "evidence.checks"),
    (Evidence(checks=tuple(Check(f"c{i}", "pass", summary="x" * 1_000)
                           for i in range(MAX_EVIDENCE_CHARACTERS // 1_000 + 1))), "evidence"),
])
def test_evidence_out_of_bounds_is_refused_naming_the_field(evidence: Evidence,
                                                            field: str) -> None:
    then = given(*_scene()).when(c.Complete(A, S1, evidence=evidence))

    assert then.refused(errors.InvalidInput).field == field
    assert then.events == []


@pytest.mark.parametrize("branch", ["main", "feature/evidence", "refs/heads/x", "v1.2-fix",
                                    "user@host"])
def test_branches_git_accepts_are_kept(branch: str) -> None:
    kept = check_evidence(Evidence(branch=branch))
    assert kept is not None and kept.branch == branch


@pytest.mark.parametrize(("record", "field"), [
    ("commits", "evidence"),
    ({"commits": "abcdef1"}, "evidence.commits"),
    ({"sha": "abcdef1"}, "evidence"),
    ({"checks": ["tests"]}, "evidence.checks[0]"),
    ({"checks": [{"name": "t", "result": "pass", "exit": 0}]}, "evidence.checks[0]"),
])
def test_a_record_of_the_wrong_shape_is_refused_naming_where(record: object,
                                                             field: str) -> None:
    with pytest.raises(errors.InvalidInput) as refused:
        Evidence.of_record(record)
    assert refused.value.field == field


def test_a_record_of_a_wrongly_typed_part_is_refused_when_checked() -> None:
    for record, field in (({"branch": 7}, "evidence.branch"), ({"pr": ["x"]}, "evidence.pr"),
                          ({"commits": [7]}, "evidence.commits[0]"),
                          ({"checks": [{"name": 1, "result": "pass"}]},
                           "evidence.checks[0].name"),
                          ({"checks": [{"name": "t", "result": "pass", "summary": 3}]},
                           "evidence.checks[0].summary")):
        with pytest.raises(errors.InvalidInput) as refused:
            check_evidence(Evidence.of_record(record))
        assert refused.value.field == field
