"""Which of our persistence adapters serves a `--db` value, and the event store on it.

The wiring (api.runtime) and the tools that open a store of their own (a recording's
decoder) ask here; the store is handed its adapter's class, so no adapter is named by a
string for the library to look up. PostgreSQL's adapter is imported only for a
PostgreSQL store: embedded commands never load its driver.
"""

from typing import Any

from eventsourcing.persistence import InfrastructureFactory

from planledger.infra import memory_answers, sqlite_head
from planledger.ledger.storage import MEMORY, is_postgres, store_settings
from planledger.ledger.store import EventStore


def persistence_for(db: str) -> type[InfrastructureFactory[Any]]:
    """The adapter for the store named by `db` (a resolved `--db` value)."""
    if db == MEMORY:  # in this process: the library's, keeping idempotent answers beside
        return memory_answers.Factory
    if is_postgres(db):  # each append one call of a function the server runs and commits
        from planledger.infra import pg_append

        return pg_append.Factory
    # Our own SQLite recorder: one transaction per command (infra.sqlite_file), and the
    # log's signed head kept in it.
    return sqlite_head.Factory


def open_event_store(db: str) -> EventStore:
    """The event store named by `db`, on its adapter."""
    return EventStore(store_settings(db), persistence_for(db))
