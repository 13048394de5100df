"""Opening a ledger: the store named by `--db`, the read model, the clock and the ids."""

import threading
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from planledger.api.derived_keys import derived_key
from planledger.infra.clock_ids import UlidGenerator, ledger_clock
from planledger.infra.persistence import open_event_store
from planledger.infra.pg_follower import PgFollower
from planledger.infra.secret import SecretError, load_secret
from planledger.infra.sqlite_checkpoints import sqlite_checkpoints
from planledger.infra.sqlite_shape import check_store_file
from planledger.ledger.log_head import HEAD_PURPOSE
from planledger.ledger.notification_log import sign_heads_with
from planledger.ledger.ports import Clock, IdGenerator
from planledger.ledger.storage import MEMORY, is_postgres, refuse_memory_sqlite, resolve_db
from planledger.ledger.store import EventStore
from planledger.projections.checkpoints import CheckpointRecorder, MemoryCheckpointRecorder
from planledger.projections.readmodel import ReadModel

if TYPE_CHECKING:
    from planledger.ledger.application import Ledger


class Runtime:
    """The store, the read model and the ledger that runs commands on them. `ledger` may be
    given as what makes it: it is then made when first asked for, so a process that only
    reads (an embedded `planledger ready`) never loads the write side (issue 19)."""

    def __init__(self, db: str, store: EventStore, ledger: "Ledger | Callable[[], Ledger]",
                 reads: ReadModel, given_secret: bytes | None = None) -> None:
        self.db = db
        self.store = store
        self.reads = reads
        self.given_secret = given_secret
        self.closed = False
        self._ledger = None if callable(ledger) else ledger
        self._make_ledger = ledger if callable(ledger) else lambda: ledger
        self._making = threading.Lock()

    def __repr__(self) -> str:  # the secret stays out of it
        return f"Runtime(db={self.db!r}, closed={self.closed})"

    @property
    def ledger(self) -> "Ledger":
        """The write side (ledger.application), made at the first command: once, whichever
        threads ask at the same time."""
        if self._ledger is None:
            with self._making:
                if self._ledger is None:
                    self._ledger = self._make_ledger()
        return self._ledger

    @cached_property
    def secret(self) -> bytes:
        """The store's secret (infra.secret), read when first needed: a PostgreSQL store
        without `PLANLEDGER_SECRET` opens for reads and refuses only what needs it."""
        return self.given_secret or load_secret(self.db)

    def close(self, *, checkpoint: bool = False) -> None:
        """Close the store (once: later calls do nothing); with `checkpoint` (a server
        shutting down), save the read model's state first, however little it moved (see
        ReadModel.close)."""
        if self.closed:
            return
        self.closed = True
        self.reads.close(checkpoint=checkpoint)
        self.store.close()


def open_runtime(
    db: str | None = None, clock: Clock | None = None, ids: IdGenerator | None = None,
    *, checkpoints: bool = False, secret: bytes | None = None, wall: Clock | None = None,
) -> Runtime:
    """The ledger on `db`. With `checkpoints`, the read model starts from the last
    checkpoint of this log (when first read) instead of folding all of it, and saves one
    every so many events and on close (projections.checkpoints): the server and the
    command-line and MCP-stdio processes agents run use them."""
    resolved = resolve_db(db)
    refuse_memory_sqlite(resolved)  # before its secret file is made
    if resolved != MEMORY and not is_postgres(resolved):
        check_store_file(resolved)  # a foreign file is refused before anything is made
    if secret is None and is_new_sqlite_file(resolved):
        secret = load_secret(resolved)  # refused before any file of the store is created
    if is_postgres(resolved):
        from planledger.infra.pg_schema import ensure_schema  # the driver only where it is needed
        ensure_schema(resolved)  # replicas never create tables themselves: see infra.pg_schema
    store = open_event_store(resolved)
    # Leases are decided by one steady clock (infra.clock_ids); `wall` stands for the
    # machine's clock under it (tests skew it), `clock` replaces it altogether.
    the_clock = clock or ledger_clock(store, postgres=is_postgres(resolved), wall=wall)
    runtime: Runtime  # checkpoints are authenticated under its secret, read when first needed
    reads = ReadModel(store, the_clock, secret=lambda: runtime.secret,
                      checkpoints=open_checkpoints(resolved) if checkpoints else None,
                      tail=PgFollower if is_postgres(resolved) else None)
    runtime = Runtime(resolved, store, lambda: _ledger(store, the_clock, ids, reads), reads,
                      secret)
    sign_heads_with(store, lambda: head_key(runtime))  # where it keeps one (ledger.log_head)
    return runtime


def _ledger(store: EventStore, clock: Clock, ids: IdGenerator | None,
            reads: ReadModel) -> "Ledger":
    from planledger.ledger.application import Ledger

    return Ledger(store, clock, ids or UlidGenerator(), reads)


def open_checkpoints(db: str) -> CheckpointRecorder:
    """The checkpoint recorder that goes with the log named by `db` (projections.checkpoints):
    in this process for `memory`, beside the log for SQLite and PostgreSQL."""
    if db == MEMORY:
        return MemoryCheckpointRecorder()
    if is_postgres(db):
        # Imported here: the PostgreSQL driver costs an embedded store's every command-line
        # process a sixth of its start-up.
        from planledger.infra.pg_checkpoints import postgres_checkpoints
        return postgres_checkpoints(db)
    return sqlite_checkpoints(db)


def is_new_sqlite_file(db: str) -> bool:
    return db != MEMORY and not is_postgres(db) and not Path(db).expanduser().exists()


def head_key(runtime: Runtime) -> bytes | None:
    """The key a store signs its log's head with, derived from its secret; None without
    a secret (PostgreSQL without PLANLEDGER_SECRET): the head is then left unsigned."""
    try:
        return derived_key(runtime.secret, HEAD_PURPOSE)
    except SecretError:
        return None
