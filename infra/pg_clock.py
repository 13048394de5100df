"""The PostgreSQL server's clock, read on one of the store's pooled connections: the one
clock every replica decides leases by (see infra.clock_ids.DatabaseClock)."""

from datetime import datetime

from eventsourcing.postgres import PostgresDatastore

from planledger.ledger.store import EventStore


def database_time(store: EventStore) -> datetime:
    """The database server's `clock_timestamp()` (the time as it runs, not as the
    transaction began), timezone-aware."""
    datastore = store.recorder.datastore  # type: ignore[attr-defined]
    assert isinstance(datastore, PostgresDatastore)
    with datastore.get_connection() as conn:
        row = conn.execute("SELECT clock_timestamp() AS now").fetchone()
    assert row is not None
    moment = row["now"]
    assert isinstance(moment, datetime)
    return moment
