"""SQLite's write lock held from outside the code under test, as another process holds it."""

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def write_lock_held(db: str) -> Iterator[None]:
    """Another connection holds the database's write lock for the block."""
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()
