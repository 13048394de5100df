"""A clock at the end of time (a log whose newest event is dated 9999-12-31 floors it
there) refuses a claim with a clear message instead of overflowing."""

from datetime import UTC, datetime

import pytest

from planledger.ledger.domain import errors
from planledger.ledger.domain.claims import Verdict, decide_claim
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.state import StepDef, StepState


def test_a_claim_whose_lease_would_end_after_the_year_9999_is_refused_as_invalid() -> None:
    step = StepState(StepId("s1"), 1, PlanSlug("p"))
    now = datetime(9999, 12, 31, 23, 59, tzinfo=UTC)

    with pytest.raises(errors.InvalidInput, match="would end after the year 9999"):
        decide_claim(step, StepDef(StepId("s1"), 0, "a step", "", (), now), Verdict("claimable"),
                     SessionId("a"), 1, 900, lambda s: s, now)
