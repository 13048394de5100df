"""Adapters to the outside world, kept out of `ledger/` (which imports no driver and no
wall clock): the system clock and ULID ids, the SQLite connection pool, and the one-time
PostgreSQL schema creation."""

# Mapped in as planledger.infra (see planledger/__init__.py), and imported only so.
if __name__ != "planledger.infra":
    raise ImportError(f"import this folder as planledger.infra, not as {__name__}")

