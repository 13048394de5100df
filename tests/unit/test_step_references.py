"""Resolving step references: `plan#N` (its number in the plan), `plan/key`, a bare key
that one plan alone has; an unknown or hostile reference is `step not found`, naming what
was given (cut when long); a bare key several plans share is refused naming each."""

import pytest

from planledger.api.runtime import Runtime
from planledger.ledger import commands as c
from planledger.ledger.commands import NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain.references import check_key, parse_reference
from tests.support import OPERATOR


def _plan(rt: Runtime, slug: str = "auth-refresh") -> list[str]:
    _, ids = rt.ledger.create_plan(slug, "Refresh", steps=[
        NewStep("Rotate", key="rotate"), NewStep("Checkout UI", key="bd-a1b2.1"),
        NewStep("Unnamed")], actor=OPERATOR)
    return list(ids)


def test_a_step_is_named_by_its_number_and_by_its_key(rt: Runtime) -> None:
    rotate, ui, unnamed = _plan(rt)
    resolve = rt.ledger.resolve_step
    assert [resolve("auth-refresh#1"), resolve("auth-refresh#2"), resolve("auth-refresh#3")] == [
        rotate, ui, unnamed]
    assert (resolve("auth-refresh/rotate"), resolve("auth-refresh/bd-a1b2.1")) == (rotate, ui)
    assert resolve(rotate) == rotate  # an id is an id


def test_a_bare_key_names_the_step_of_the_one_plan_that_has_it(rt: Runtime) -> None:
    _, ui, _ = _plan(rt)
    assert rt.ledger.resolve_step("bd-a1b2.1") == ui


def test_a_bare_key_two_plans_share_is_refused_naming_both(rt: Runtime) -> None:
    _plan(rt)
    _plan(rt, "billing")
    with pytest.raises(errors.AmbiguousReference) as refused:
        rt.ledger.resolve_step("rotate")
    assert refused.value.candidates == ["auth-refresh/rotate", "billing/rotate"]
    assert str(refused.value) == ('step reference "rotate" is ambiguous: it names '
                                  "auth-refresh/rotate, billing/rotate; give one of those")
    assert rt.ledger.resolve_step("billing/rotate") != rt.ledger.resolve_step(
        "auth-refresh/rotate")


@pytest.mark.parametrize("text", [
    "auth-refresh#4", "auth-refresh#0", "auth-refresh#-1", "auth-refresh#99999999999999999999",
    "auth-refresh#", "#1", "#0", "auth-refresh#1#1", "auth-refresh#1.5", "auth-refresh# 1",
    "nope#1", "Auth-Refresh#1", "auth-refresh/nope", "auth-refresh/", "/rotate",
    "auth-refresh/rotate/x", "nope/rotate", "", "a#1\n", "auth-refresh#\uff11",
])
def test_an_unknown_or_malformed_reference_is_step_not_found_naming_it(
        rt: Runtime, text: str) -> None:
    _plan(rt)
    with pytest.raises(errors.UnknownStep) as refused:
        rt.ledger.resolve_step(text)
    assert str(refused.value) == f'step not found: "{text}"'


def test_a_very_long_reference_is_not_found_and_shown_cut(rt: Runtime) -> None:
    _plan(rt)
    for text in ("auth-refresh#" + "9" * 5_000, "x" * 100_000 + "#1", "a/" + "b" * 10_000):
        with pytest.raises(errors.UnknownStep) as refused:
            rt.ledger.resolve_step(text)
        assert len(str(refused.value)) < 130 and str(refused.value).endswith('…"')


def test_text_that_is_no_reference_passes_as_an_id_and_is_not_found_where_used(
        rt: Runtime) -> None:
    _plan(rt)
    assert parse_reference("01KXMRCX4W2M8YB5Q2Y3V9ZP7N") is None
    assert rt.ledger.resolve_step("no-such-key") == "no-such-key"  # a key nobody has
    with pytest.raises(errors.UnknownStep, match='step not found: "no-such-key"'):
        rt.ledger.step("no-such-key")


def test_a_reference_follows_steps_added_later_with_a_key(rt: Runtime) -> None:
    rotate, *_ = _plan(rt)
    added = rt.ledger.execute(c.AddStep("auth-refresh", "Alert", OPERATOR, key="alert",
                                        depends_on=(rotate,)))
    assert added.step.key == "alert" and added.step.position == 3
    assert rt.ledger.resolve_step("auth-refresh#4") == added.step.id
    assert rt.ledger.resolve_step("alert") == added.step.id


@pytest.mark.parametrize(("key", "problem"), [
    ("", "is not 1-64"), ("-x", "is not 1-64"), ("a b", "is not 1-64"), ("a/b", "is not 1-64"),
    ("a#1", "is not 1-64"), ("k" * 65, "is not 1-64"), ("é", "is not 1-64"),
    ("01KXMRCX4W2M8YB5Q2Y3V9ZP7N", "reads as a step id"),
])
def test_a_key_is_bounded_and_never_reads_as_an_id(key: str, problem: str) -> None:
    with pytest.raises(errors.InvalidInput, match=problem):
        check_key(key)


def test_a_key_is_unique_within_its_plan_and_nothing_is_written(rt: Runtime) -> None:
    _plan(rt)
    before = rt.store.log_end()
    with pytest.raises(errors.InvalidInput, match="unique within its plan"):
        rt.ledger.execute(c.AddStep("auth-refresh", "Again", OPERATOR, key="rotate"))
    with pytest.raises(errors.InvalidInput, match="unique within its plan"):
        rt.ledger.create_plan("twice", "Twice", steps=[NewStep("a", key="k"),
                                                       NewStep("b", key="k")], actor=OPERATOR)
    assert rt.store.log_end() == before
