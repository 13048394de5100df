"""The `planledger` commands for people and scripts (registered in `api.cli`)."""
