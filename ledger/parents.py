"""Closing the parents a completion finishes and reopening the parents a reopening
unfinishes (ledger.domain.relations), for the handlers that make a step done (a
completion in ledger.claim_handlers, an approval in ledger.review_handlers) or open again
(a reopening in ledger.claim_handlers)."""

from datetime import datetime

from planledger.ledger.domain import relations
from planledger.ledger.domain.claims import Decision
from planledger.ledger.domain.ids import Actor
from planledger.ledger.domain.state import PlanState, StepDef
from planledger.ledger.execution import Execution


def with_parents_closed(run: Execution, decision: Decision, plan: PlanState,
                        definition: StepDef, actor: Actor, now: datetime) -> Decision:
    """The decision that makes the step done, with the parents it finishes closed in the
    same write (none on a refusal). The parents and their other children are read fresh; a
    parent closed or claimed meanwhile is left as it is, and its stream's version makes a
    close decided on a stale read conflict and be decided again."""
    if decision.refusal is not None or not decision.events:
        return decision
    closes = relations.closed_parents(plan, definition, run.store.step, actor, now)
    return Decision([*decision.events, *closes]) if closes else decision


def with_parents_reopened(run: Execution, decision: Decision, plan: PlanState,
                          definition: StepDef, actor: Actor, now: datetime) -> Decision:
    """The decision that reopens the step, with its done parents reopened in the same
    write (none on a refusal); read fresh, their streams' versions guard a stale read."""
    if decision.refusal is not None or not decision.events or definition.parent is None:
        return decision
    opens = relations.reopened_parents(plan, definition, run.store.step, actor, now)
    return Decision([*decision.events, *opens]) if opens else decision
