"""Backing up and restoring an SQLite store with SQLite's online backup API.

A backup is a consistent copy of the whole database file as it stood when the copy began
(one read transaction: in WAL mode writers go on meanwhile, and what they commit after it
began is not in the copy). It holds the log, its snapshots and its signed head. It does not
hold the store's secret (`<db>.secret`: session tokens and the head's signature depend on
it; keep it apart, as a secret) nor the read models' checkpoints (`<name>.views.sqlite`:
disposable, rebuilt from the log).
"""

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from planledger.infra.sqlite_checkpoints import checkpoint_path
from planledger.infra.sqlite_schema import EVENTS_TABLE


class BackupError(Exception):
    """A backup or restore that cannot be done as asked; nothing was changed."""


@dataclass(frozen=True)
class Copied:
    """What a backup or restore copied: how many events, up to which log position."""

    events: int
    position: int


def backup(db: str, target: str) -> Copied:
    """Copy the store `db` to the new file `target` (written beside it, then renamed into
    place, so a failed backup leaves no half file under that name)."""
    source_path, target_path = Path(db), Path(target)
    if not source_path.is_file():
        raise BackupError(f"{db}: no such store")
    if target_path.exists():
        raise BackupError(f"{target} already exists; name a new file")
    partial = target_path.with_name(target_path.name + ".partial")
    try:
        with _open(source_path) as source, _open(partial) as copy:
            source.backup(copy)  # one step: one read transaction, one consistent state
            copied = _log_of(copy, str(target))
        os.replace(partial, target_path)
    finally:
        partial.unlink(missing_ok=True)
    return copied


def restore(backup_file: str, db: str, *, replace: bool) -> Copied:
    """Put the backup in place of the store `db` (created if missing). A store that holds
    events is replaced only with `replace`; its read-model checkpoint file is removed (it
    was taken of the replaced log)."""
    source_path = Path(backup_file)
    if not source_path.is_file():
        raise BackupError(f"{backup_file}: no such file")
    with _open(source_path) as source:
        if source.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            raise BackupError(f"{backup_file} is damaged (SQLite's quick_check fails)")
        copied = _log_of(source, backup_file)
        Path(db).parent.mkdir(parents=True, exist_ok=True)
        with _open(Path(db)) as store:
            held = _events_in(store)
            if held and not replace:
                raise BackupError(
                    f"{db} holds {held} events; restoring would replace them. Stop its "
                    "servers and run again with --replace")
            source.backup(store)  # under the store's write lock, all at once
    Path(checkpoint_path(db)).unlink(missing_ok=True)
    return copied


@contextmanager
def _open(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection to `path`, closed after; SQLite's errors named by the file."""
    try:
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    except sqlite3.Error as error:
        raise BackupError(f"{path}: {error}") from None
    try:
        yield conn
    except sqlite3.Error as error:
        raise BackupError(f"{path}: {error}") from None
    finally:
        conn.close()


def _log_of(conn: sqlite3.Connection, name: str) -> Copied:
    """The log in `conn`; refuses a file that holds no planledger log."""
    try:
        count, position = conn.execute(
            f"SELECT count(*), coalesce(max(rowid), 0) FROM {EVENTS_TABLE}"
        ).fetchone()
    except sqlite3.DatabaseError as error:
        raise BackupError(f"{name} holds no planledger log ({error})") from None
    return Copied(int(count), int(position))


def _events_in(conn: sqlite3.Connection) -> int:
    try:
        return int(conn.execute(f"SELECT count(*) FROM {EVENTS_TABLE}").fetchone()[0])
    except sqlite3.OperationalError:  # no such table: a new, empty store
        return 0
