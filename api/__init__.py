"""The ways in: CLI, HTTP, MCP and the console. They translate; the rules live in `ledger`."""

# Mapped in as planledger.api (see planledger/__init__.py), and imported only so.
if __name__ != "planledger.api":
    raise ImportError(f"import this folder as planledger.api, not as {__name__}")

