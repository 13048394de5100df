"""planledger's read side: read models folded from the event log."""
