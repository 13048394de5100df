"""The ways in: CLI, HTTP, MCP and the console. They translate; the rules live in `ledger`."""

# The contract's version (agents and scripts depend on it): the package's, the OpenAPI
# document's and the MCP server's. Bump it when what callers send or get changes.
__version__ = "0.2.0"
