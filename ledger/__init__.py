"""planledger's write side: the pure domain and the application that appends its events."""

# Mapped in as planledger.ledger (see planledger/__init__.py), and imported only so.
if __name__ != "planledger.ledger":
    raise ImportError(f"import this folder as planledger.ledger, not as {__name__}")

