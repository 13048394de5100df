"""Idempotent answers in SQLite: a table beside the log (ledger.answers), written on the
cursor of the transaction that inserts the write's events, so both commit or neither.

Each write of an answer first drops the answers that have expired (an index range, empty
but for the first write after one expired): the table holds one window of answers, however
long the store has run, with no timer and no transaction of its own.
"""

import sqlite3
from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import IntegrityError

from planledger.ledger.answers import Answer, micros

ANSWERS_TABLE = "planledger_answers"
CREATE = [
    f"CREATE TABLE IF NOT EXISTS {ANSWERS_TABLE} (key TEXT PRIMARY KEY, scope TEXT, "
    "request TEXT NOT NULL, status INTEGER NOT NULL, body TEXT NOT NULL, "
    "recorded_at INTEGER NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {ANSWERS_TABLE}_recorded_at "
    f"ON {ANSWERS_TABLE} (recorded_at)",
]
_DROP = f"DELETE FROM {ANSWERS_TABLE} WHERE recorded_at < ?"
_INSERT = f"INSERT INTO {ANSWERS_TABLE} VALUES (?, ?, ?, ?, ?, ?)"
SELECT = (f"SELECT key, scope, request, status, body, recorded_at FROM {ANSWERS_TABLE} "
          "WHERE key = ?")


def insert_answers(cursor: sqlite3.Cursor, answers: Sequence[Answer]) -> None:
    """Drop expired answers, then insert these; a key still taken is a conflict (the
    library's IntegrityError, which rolls the whole transaction back)."""
    expired = [a.drops_before for a in answers if a.drops_before is not None]
    if expired:
        cursor.execute(_DROP, (micros(min(expired)),))
    try:
        cursor.executemany(_INSERT, [a.row() for a in answers])
    except sqlite3.IntegrityError as error:
        raise IntegrityError(str(error)) from error


def select_answer(cursor: sqlite3.Cursor, key: str) -> Answer | None:
    row: Any = cursor.execute(SELECT, (key,)).fetchone()
    return None if row is None else Answer.from_row(tuple(row))
