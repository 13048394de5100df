"""SQLite persistence that keeps the log's signed head (ledger.log_head) in each append's
own transaction.

The recorder is infra.sqlite_recorder's; after it inserts an append's events, on the same
cursor, before the commit, it reads the head, chains the new events onto its tip
(ledger.chain.link), signs the new position and tip and writes them back, so the head and
the log never disagree, whoever reads them. The cost is one write of a one-row table, a
hash per event and an HMAC per append (see bench/RESULTS.md); the read is folded into the
write when the head is, whole, the one this process wrote last, right before this append.

A head it cannot vouch for is left as it is, as evidence for a verify: a head whose
signature does not hold, or that stands past the start of this append (the log's newest
events were deleted and their positions taken again). Only a store with no head table
(written before heads were kept) gets a head at its next append, chained over the whole log
once, with a warning; the table is created in that same transaction and never dropped, so
its row deleted (with a cut tail, say) stays missing, as evidence, instead of being started
again over the cut log.
"""

import logging
import sqlite3
from collections.abc import Callable, Sequence

from eventsourcing.persistence import StoredEvent

from planledger.infra.sqlite_recorder import Factory as LogFactory
from planledger.infra.sqlite_recorder import LogRecorder
from planledger.infra.sqlite_schema import EVENTS_TABLE
from planledger.ledger.answers import Answer
from planledger.ledger.chain import GENESIS, link
from planledger.ledger.log_head import HeadSigner, SignedHead, signed_by

HEAD_TABLE = "planledger_head"
_CREATE = (f"CREATE TABLE IF NOT EXISTS {HEAD_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), "
           "position INTEGER NOT NULL, tip TEXT NOT NULL, mac TEXT)")
_READ = f"SELECT position, tip, mac FROM {HEAD_TABLE} WHERE id = 1"
_INSERT = f"INSERT INTO {HEAD_TABLE} (id, position, tip, mac) VALUES (1, ?, ?, ?)"
_UPDATE = f"UPDATE {HEAD_TABLE} SET position = ?, tip = ?, mac = ? WHERE id = 1"
# Moves the head only if it is still, whole, the one this process wrote: the read and the
# check of _advance's general path in one statement.
_MOVE_OWN = (f"UPDATE {HEAD_TABLE} SET position = ?, tip = ?, mac = ? "
             "WHERE id = 1 AND position = ? AND tip = ? AND mac IS ?")
_EXISTS = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"

log = logging.getLogger("planledger.head")


def no_key() -> bytes | None:
    return None


class HeadKeepingRecorder(LogRecorder):
    """infra.sqlite_recorder's log recorder; every insert moves the signed head with it.
    `head_key` gives the key heads are signed with (None: the head moves unsigned, and a
    verify reports it)."""

    head_key: Callable[[], bytes | None] = staticmethod(no_key)
    _table_known = False  # the head table was there, committed, when this process looked
    _key: bytes | None = None
    _signer: HeadSigner | None = None  # under _key
    _wrote: SignedHead | None = None  # the head this process wrote last

    def insert_rows(self, cursor: sqlite3.Cursor, stored_events: Sequence[StoredEvent],
                    answers: Sequence[Answer]) -> list[int]:
        ids = super().insert_rows(cursor, stored_events, answers)
        if ids:
            self._advance(cursor, ids, stored_events)
        return ids

    def _advance(self, cursor: sqlite3.Cursor, ids: list[int],
                 events: Sequence[StoredEvent]) -> None:
        if self._key is None and (key := self.head_key()) is not None:
            self._key, self._signer = key, HeadSigner(key)  # derived once, when first there
        key = self._key
        if self._moved_own(cursor, ids, events):
            return
        if not self._table_known:
            self._table_known = cursor.execute(_EXISTS, (HEAD_TABLE,)).fetchone() is not None
            if not self._table_known:
                self._start(cursor, ids, events)
                return
        row = cursor.execute(_READ).fetchone()
        if row is None:
            return  # the head was deleted (its table outlives it): the gap is the evidence
        head = SignedHead(int(row[0]), str(row[1]), row[2])
        vouched = head == self._wrote or key is None or signed_by(head, key)
        if head.position >= ids[0] or not vouched:
            return  # not a head this process can vouch for: keep it as evidence
        tip = self._fold(cursor, head.position, head.tip, ids[0])
        self._write(cursor, _UPDATE, self._chain(tip, ids, events))

    def _moved_own(self, cursor: sqlite3.Cursor, ids: list[int],
                   events: Sequence[StoredEvent]) -> bool:
        """When this append follows right on the head this process wrote last, move that
        head in one statement that matches it whole (no read); False when it did not match
        (another process appended since, or someone changed or deleted the row), and
        nothing was written."""
        wrote = self._wrote
        if wrote is None or wrote.position != ids[0] - 1:
            return False
        moved = self._signed(self._chain(wrote.tip, ids, events))
        cursor.execute(_MOVE_OWN, (moved.position, moved.tip, moved.mac,
                                   wrote.position, wrote.tip, wrote.mac))
        if cursor.rowcount != 1:
            return False
        self._wrote = moved  # see _write
        return True

    def _start(self, cursor: sqlite3.Cursor, ids: list[int], events: Sequence[StoredEvent]) -> None:
        """A store from before heads (no head table): its head starts over the whole log,
        in the transaction that creates the table."""
        cursor.execute(_CREATE)
        if ids[0] > 1:
            log.warning("%s kept no signed head: starting one over its %d events. If this "
                        "store was ever written with signed heads, its head "
                        "table was dropped: check the log against a copy you trust",
                        self.file.path, ids[0] - 1)
        tip = self._fold(cursor, 0, GENESIS, ids[0])
        self._write(cursor, _INSERT, self._chain(tip, ids, events))

    @staticmethod
    def _chain(tip: str, ids: list[int], events: Sequence[StoredEvent]) -> tuple[int, str]:
        for n_id, event in zip(ids, events, strict=True):
            tip = link(tip, n_id, str(event.originator_id), event.originator_version,
                       event.topic, event.state)
        return ids[-1], tip

    def _signed(self, at: tuple[int, str]) -> SignedHead:
        position, tip = at
        return SignedHead(position, tip, self._signer.mac(position, tip)
                          if self._signer is not None else None)

    def _write(self, cursor: sqlite3.Cursor, statement: str, at: tuple[int, str]) -> None:
        moved = self._signed(at)
        cursor.execute(statement, (moved.position, moved.tip, moved.mac))
        # Noted before the commit: a rolled-back head is never read back, so never matched.
        self._wrote = moved

    def _fold(self, cursor: sqlite3.Cursor, position: int, tip: str, upto: int) -> str:
        """Chain onto `tip` the events after `position` and before `upto`: appended by a
        process that kept no head (one from before heads), or all of an older log."""
        if position == upto - 1:
            return tip
        rows = cursor.execute(
            f"SELECT rowid, originator_id, originator_version, topic, state FROM "
            f"{EVENTS_TABLE} WHERE rowid > ? AND rowid < ? ORDER BY rowid",
            (position, upto))
        for n_id, stream, version, topic, state in rows:
            tip = link(tip, n_id, stream, version, topic, state)
        return tip

    def read_head(self) -> SignedHead | None:
        """The head as stored (None when the store keeps none yet)."""
        with self.file.transaction(commit=False) as cursor:
            exists = cursor.execute(_EXISTS, (HEAD_TABLE,)).fetchone()
            row = cursor.execute(_READ).fetchone() if exists else None
        return SignedHead(int(row[0]), str(row[1]), row[2]) if row else None

    def head_began(self) -> bool:
        """Whether the store ever kept a head: its head table, made by its first append
        since heads were kept, outlives a head deleted from it."""
        with self.file.reading() as cursor:
            return cursor.execute(_EXISTS, (HEAD_TABLE,)).fetchone() is not None


class Factory(LogFactory):
    """infra.sqlite_recorder's factory with the head-keeping recorder."""

    log_recorder_class = HeadKeepingRecorder
