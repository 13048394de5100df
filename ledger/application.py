"""The write side: commands in, events appended with optimistic concurrency, refusals out.

Every command loads fresh state, decides with the pure domain, and appends the decision's
events in one transaction. When another writer moved a stream in between, the append
fails as a whole and the command decides again on the new state; a decision is never
reused. Refusals worth auditing (bounces, stale fences) are appended before they are
raised, so a race can be read from the log alone.
"""

from planledger.ledger.claim_commands import ClaimCommands, Grant
from planledger.ledger.core import MAX_ATTEMPTS
from planledger.ledger.plan_commands import NewStep, PlanCommands

__all__ = ["MAX_ATTEMPTS", "Grant", "Ledger", "NewStep"]


class Ledger(PlanCommands, ClaimCommands):
    """The plan ledger's commands. Interfaces (HTTP, MCP, CLI) call these and only these."""
