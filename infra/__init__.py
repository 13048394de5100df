"""Adapters to the outside world, kept out of `ledger/` (which imports no driver and no
wall clock): the system clock and ULID ids, the SQLite connection pool, and the one-time
PostgreSQL schema creation."""
