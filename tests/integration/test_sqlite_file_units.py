"""SQLiteFile's write units (infra.sqlite_file) where SQLite refuses the COMMIT itself: the
unit is rolled back, the refusal comes out as the library's error, and the one writer
begins the next unit clean.

A deferred foreign key is SQLite's own way to make a COMMIT fail (the check runs at
COMMIT, and SQLite leaves the transaction open after refusing it), as a full disk does
when the write-ahead log cannot grow.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from eventsourcing.persistence import IntegrityError

from planledger.infra.sqlite_file import SQLiteFile


@pytest.fixture
def file(tmp_path: Path) -> Iterator[SQLiteFile]:
    file = SQLiteFile(str(tmp_path / "units.sqlite"))
    writer = file.take_writer(False)
    try:
        writer.execute("PRAGMA foreign_keys = ON")  # per connection, outside a transaction
    finally:
        file.let_go_of_writer(None)
    with file.transaction(commit=True) as cursor:
        cursor.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        cursor.execute("CREATE TABLE child (parent INTEGER REFERENCES parent (id) "
                       "DEFERRABLE INITIALLY DEFERRED)")
    yield file
    file.close()


def _rows(file: SQLiteFile, table: str) -> list[int]:
    with file.reading() as cursor:
        return [row[0] for row in cursor.execute(f"SELECT * FROM {table} ORDER BY 1")]


def test_a_refused_commit_is_rolled_back_and_the_next_unit_begins_clean(
    file: SQLiteFile,
) -> None:
    with pytest.raises(IntegrityError, match="FOREIGN KEY"), file.transaction(
            commit=True) as cursor:
        cursor.execute("INSERT INTO parent VALUES (1)")
        cursor.execute("INSERT INTO child VALUES (99)")  # no such parent: refused at COMMIT

    with file.transaction(commit=True) as cursor:  # would fail inside a left-open one
        cursor.execute("INSERT INTO parent VALUES (2)")

    assert _rows(file, "parent") == [2]  # nothing of the refused unit, all of the next
    assert _rows(file, "child") == []
