"""The ways in: CLI, HTTP, MCP and the console. They translate; the rules live in `ledger`."""
