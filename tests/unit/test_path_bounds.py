"""Deciding path overlaps is bounded work: a pattern has at most MAX_SEGMENTS segments,
one question visits at most QUESTION_STATES pairs of positions (past that it answers
"they overlap", the safe side), and a request's questions share one Budget, refused
(OverBudget, an InvalidInput naming the field) once it is spent. Budgets count states,
never time, so every answer here is the same on any machine."""

import pytest

from planledger.ledger.domain import paths as p
from planledger.ledger.domain.errors import InvalidInput

# Two legal patterns that do not overlap (one ends in b, the other in c) but whose
# exact decision visits ~58,000 pairs of positions: 16 stars between long literals.
HARD_B = "*" + ("a" * 15 + "*") * 15 + "b"
HARD_C = "*" + ("a" * 15 + "*") * 15 + "c"


def test_a_pattern_of_too_many_segments_is_refused() -> None:
    deep = "/".join(["a"] * (p.MAX_SEGMENTS + 1))
    with pytest.raises(InvalidInput, match=f"the limit is {p.MAX_SEGMENTS}"):
        p.check_pattern(deep)
    assert p.check_pattern("/".join(["a"] * p.MAX_SEGMENTS)).count("/") == p.MAX_SEGMENTS - 1


def test_a_question_too_hard_to_decide_errs_on_overlapping() -> None:
    # (patterns no other test asks about: an answer is remembered once decided)
    hard_b, hard_c = p.check_pattern(HARD_B + "q"), p.check_pattern(HARD_C + "q")
    budget = p.Budget()
    assert p.overlaps(hard_b, hard_c, budget)
    spent = p.REQUEST_STATES - budget.left
    assert p.QUESTION_STATES < spent <= p.QUESTION_STATES + 1
    assert p.covers(hard_b, "a" * 300 + "c", p.Budget())  # a file's question too


def test_plain_patterns_decide_exactly_and_cheaply() -> None:
    budget = p.Budget()
    assert p.overlaps("src/**/*.go", "src/auth/token.go", budget)
    assert not p.overlaps("docs/*.md", "src/**", budget)
    assert not p.overlaps("internal/auth/*_test.go", "internal/auth/*.rs", budget)
    assert p.REQUEST_STATES - budget.left < 200


def test_a_request_of_many_hard_questions_is_refused_once_its_budget_is_spent() -> None:
    budget = p.Budget(field="paths")
    mine = [p.check_pattern(f"{HARD_B}{n}") for n in range(40)]
    with pytest.raises(p.OverBudget) as refused:
        for pattern in mine:
            p.overlaps(pattern, p.check_pattern(HARD_C), budget)
    assert refused.value.field == "paths" and "too long" in str(refused.value)
    assert budget.left < 0
