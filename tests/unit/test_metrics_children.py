"""Metrics keeps each counter's labelled children once asked for: what /metrics shows must
be what asking prometheus_client for the child every time would show."""

from datetime import UTC, datetime

from planledger.api.metrics import Metrics
from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId


def _grant(renewed: bool) -> c.Grant:
    return c.Grant(StepId("s1"), SessionId("a"), 1, datetime(2030, 1, 1, tzinfo=UTC),
                   renewed, PlanSlug("p"), "step")


def _without_creation_times(text: bytes) -> list[str]:
    return [line for line in text.decode().splitlines() if "_created" not in line]


def test_the_exposition_is_what_labels_on_every_count_gives() -> None:
    kept, asked = Metrics(), Metrics()
    refusals = [errors.AlreadyClaimed("s1", "step", "b", 2),
                errors.Closed("s1", "step", "done"), errors.AlreadyClaimed("s1", "step", "b", 3),
                errors.UnknownStep("s9")]
    for renewed in (False, True, False):
        kept.observe(c.Claim("s1", "a"), _grant(renewed))
        asked.claims.labels(renewed=str(renewed).lower()).inc()
    for error in refusals:
        kept.refused(error)
    asked.bounces.labels(reason="already_claimed").inc(2)
    asked.bounces.labels(reason="closed").inc()
    kept.observe(c.EndSession("a"), c.SessionEnded(SessionId("a"), (StepId("s1"),) * 2))
    kept.released("released")
    kept.released("released")
    asked.releases.labels(reason="session_ended").inc(2)
    asked.releases.labels(reason="released").inc(2)

    shown = _without_creation_times(kept.exposition())
    assert shown == _without_creation_times(asked.exposition())
    assert 'planledger_bounces_total{reason="already_claimed"} 2.0' in shown
    assert 'planledger_claims_total{renewed="false"} 2.0' in shown
