"""The embedded store's recorders: the event-store library's recorder interfaces
(`eventsourcing.persistence`, its documented extension point), with our own statements on
our own connections (infra.sqlite_file) and the tables of infra.sqlite_schema.

`LogRecorder` keeps the log: events by stream, and by position for the read models. Inside
a unit, everything runs on the unit's cursor, so a command's reads and its append are one
transaction; the idempotent answers a write carries go to their table in that same
transaction (infra.sqlite_answers). `StreamRecorder` keeps the snapshots. The factory is
the one the wiring (infra.persistence, through infra.sqlite_head) hands the store.
"""

import sqlite3
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    InfrastructureFactory,
    Notification,
    ProcessRecorder,
    StoredEvent,
    Subscription,
    TrackingRecorder,
)
from eventsourcing.utils import Environment

from planledger.infra import sqlite_answers
from planledger.infra.sqlite_file import SQLiteFile
from planledger.infra.sqlite_schema import (
    CREATE_EVENTS,
    CREATE_FORMAT,
    CREATE_SNAPSHOTS,
    EVENTS_TABLE,
    INSERT,
    SELECT_END,
    SELECT_FORMAT,
    SELECT_STREAM,
    SELECT_STREAM_NAMES,
    SNAPSHOTS_TABLE,
    STAMP_FORMAT,
    select_log,
)
from planledger.infra.store_format import FORMAT, refuse_newer
from planledger.ledger.answers import Answer
from planledger.version import __version__


def _row(event: StoredEvent) -> tuple[str, int, str, bytes]:
    stream = event.originator_id
    return (stream.hex if isinstance(stream, UUID) else stream, event.originator_version,
            event.topic, event.state)


class StreamRecorder(AggregateRecorder):
    """Events by stream in `table` of `file`: the snapshots."""

    def __init__(self, file: SQLiteFile, table: str = SNAPSHOTS_TABLE,
                 create: str = CREATE_SNAPSHOTS) -> None:
        self.file, self.table, self._create = file, table, create
        self._insert = INSERT.format(table=table)
        self._select = SELECT_STREAM.format(table=table)

    def create_table(self) -> None:
        with self.file.transaction(commit=True) as cursor:
            cursor.execute(self._create)

    def insert_events(self, stored_events: Sequence[StoredEvent],
                      **kwargs: Any) -> Sequence[int] | None:
        with self.file.transaction(commit=True) as cursor:
            cursor.executemany(self._insert, [_row(event) for event in stored_events])
        return None

    def select_events(self, originator_id: UUID | str, *, gt: int | None = None,
                      lte: int | None = None, desc: bool = False,
                      limit: int | None = None) -> Sequence[StoredEvent]:
        statement = self._select
        values: list[Any] = [originator_id.hex if isinstance(originator_id, UUID)
                             else originator_id]
        if gt is not None:
            statement += " AND originator_version > ?"
            values.append(gt)
        if lte is not None:
            statement += " AND originator_version <= ?"
            values.append(lte)
        statement += " ORDER BY originator_version DESC" if desc else \
            " ORDER BY originator_version"
        if limit is not None:
            statement += " LIMIT ?"
            values.append(limit)
        with self.file.reading() as cursor:
            rows = cursor.execute(statement, values).fetchall()
        return [StoredEvent(originator_id=str(row[0]), originator_version=row[1],
                            topic=row[2], state=row[3]) for row in rows]


class LogRecorder(StreamRecorder, ApplicationRecorder):
    """The log: events by stream and by position (the rowid), with the idempotent answers
    beside it."""

    def __init__(self, file: SQLiteFile) -> None:
        super().__init__(file, EVENTS_TABLE, CREATE_EVENTS)

    def create_table(self) -> None:
        """The log's tables where missing, and the file's format row (infra.store_format):
        a file a newer planledger wrote is refused before anything is written to it."""
        with self.file.transaction(commit=True) as cursor:
            cursor.execute(CREATE_FORMAT)
            written = cursor.execute(SELECT_FORMAT).fetchone()
            refuse_newer(self.file.path, written)
            cursor.execute(CREATE_EVENTS)
            for statement in sqlite_answers.CREATE:
                cursor.execute(statement)
            cursor.execute(STAMP_FORMAT, (FORMAT, __version__))

    def insert_events(self, stored_events: Sequence[StoredEvent],
                      **kwargs: Any) -> Sequence[int] | None:
        """Insert the events (and `answers`, ledger.answers) in the current unit, or in a
        transaction of their own; their positions, in order."""
        answers: Sequence[Answer] = kwargs.get("answers", ())
        with self.file.transaction(commit=True) as cursor:
            return self.insert_rows(cursor, stored_events, answers)

    def insert_rows(self, cursor: sqlite3.Cursor, stored_events: Sequence[StoredEvent],
                    answers: Sequence[Answer]) -> list[int]:
        """The insert on the transaction's cursor; their positions, in order."""
        positions: list[int] = []
        insert = self._insert
        for event in stored_events:
            cursor.execute(insert, _row(event))
            positions.append(int(cursor.lastrowid or 0))
        if answers:
            sqlite_answers.insert_answers(cursor, answers)
        return positions

    def select_answer(self, key: str) -> Answer | None:
        """The answer kept under `key` (ledger.answers.AnswerTable)."""
        with self.file.reading() as cursor:
            return sqlite_answers.select_answer(cursor, key)

    def select_notifications(self, start: int | None, limit: int, stop: int | None = None,
                             topics: Sequence[str] = (), *,
                             inclusive_of_start: bool = True) -> Sequence[Notification]:
        statement, values = select_log(start, limit, stop, topics, inclusive_of_start)
        with self.file.reading() as cursor:
            rows = cursor.execute(statement, values).fetchall()
        return [Notification(id=row[0], originator_id=str(row[1]), originator_version=row[2],
                             topic=row[3], state=row[4]) for row in rows]

    def max_notification_id(self) -> int | None:
        with self.file.reading() as cursor:
            found = cursor.execute(SELECT_END).fetchone()[0]
        return None if found is None else int(found)

    def streams_appended(self, after: int, upto: int) -> list[str]:
        """The stream name of each event at the positions after..upto.

        Only names are read. Reading the events whole, states and all, just to learn which
        streams moved held the write lock too long after a large plan
        (figure: bench/findings.md)."""
        with self.file.reading() as cursor:
            rows = cursor.execute(SELECT_STREAM_NAMES, (after, upto)).fetchall()
        return [str(row[0]) for row in rows]

    def subscribe(self, gt: int | None = None,
                  topics: Sequence[str] = ()) -> Subscription[ApplicationRecorder]:
        raise NotImplementedError("the embedded store's log is followed by reading it "
                                  "(projections.follower), not by subscription")


class Factory(InfrastructureFactory[TrackingRecorder]):
    """The embedded store's persistence: its log and snapshots in one SQLite file
    (`SQLITE_DBNAME`), writes waiting `SQLITE_LOCK_TIMEOUT` seconds for another process."""

    log_recorder_class: type[LogRecorder] = LogRecorder

    def __init__(self, env: Environment | dict[str, str] | None) -> None:
        super().__init__(env)
        path = self.env.get("SQLITE_DBNAME")
        if not path:
            raise OSError("the SQLite store's path is not set (SQLITE_DBNAME)")
        timeout = (self.env.get("SQLITE_LOCK_TIMEOUT") or "").strip()
        if timeout and not timeout.isdigit():
            raise OSError(f"SQLITE_LOCK_TIMEOUT is not a whole number of seconds: {timeout!r}")
        self.file = SQLiteFile(path, lock_seconds=int(timeout) if timeout else None)

    def aggregate_recorder(self, purpose: str = "events") -> AggregateRecorder:
        if purpose != "snapshots":
            raise NotImplementedError(f"the embedded store keeps no {purpose!r} by stream")
        recorder = StreamRecorder(self.file)
        recorder.create_table()
        return recorder

    def application_recorder(self) -> ApplicationRecorder:
        recorder = self.log_recorder_class(self.file)
        recorder.create_table()
        return recorder

    def tracking_recorder(self, tracking_recorder_class: type[TrackingRecorder] | None = None
                          ) -> TrackingRecorder:
        raise NotImplementedError("the read models track their positions in their own "
                                  "file (infra.sqlite_checkpoints)")

    def process_recorder(self) -> ProcessRecorder:
        raise NotImplementedError("the embedded store runs no event-processing system")

    def close(self) -> None:
        self.file.close()
        super().close()
