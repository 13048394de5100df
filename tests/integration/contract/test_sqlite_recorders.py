"""Our SQLite recorders (infra.sqlite_recorder) held to the event-store library's own test
cases for recorders (`eventsourcing.tests.persistence`, which the library ships for anyone
who writes one), and to the files the library's own SQLite recorder wrote before ours.

The library's timing cases (`test_performance`, `test_concurrent_throughput`) print figures
and judge nothing, so they are left out; bench/ measures ours. Stream names are text, as
the store keeps them (ORIGINATOR_ID_TYPE=text).
"""

import tempfile
from pathlib import Path
from uuid import uuid4

from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore
from eventsourcing.tests.persistence import (
    AggregateRecorderTestCase,
    ApplicationRecorderTestCase,
)

from planledger.infra.sqlite_file import SQLiteFile
from planledger.infra.sqlite_head import HeadKeepingRecorder
from planledger.infra.sqlite_recorder import LogRecorder, StreamRecorder


class _InAFile:
    """Each case's recorder on a new file, removed after the case."""

    def setUp(self) -> None:
        self._directory = tempfile.TemporaryDirectory()
        self._files: list[SQLiteFile] = []

    def tearDown(self) -> None:
        for file in self._files:
            file.close()
        self._directory.cleanup()

    def new_file(self) -> SQLiteFile:
        file = SQLiteFile(str(Path(self._directory.name) / "ledger.sqlite"))
        self._files.append(file)
        return file

    def new_originator_id(self) -> str:
        return str(uuid4())


class TestStreamRecorder(_InAFile, AggregateRecorderTestCase):
    def create_recorder(self) -> StreamRecorder:
        recorder = StreamRecorder(self.new_file())
        recorder.create_table()
        return recorder

    test_performance = None  # type: ignore[assignment]


class TestLogRecorder(_InAFile, ApplicationRecorderTestCase[LogRecorder]):
    def create_recorder(self) -> LogRecorder:
        recorder = LogRecorder(self.new_file())
        recorder.create_table()
        return recorder

    test_performance = None  # type: ignore[assignment]
    test_concurrent_throughput = None  # type: ignore[assignment]


class TestHeadKeepingRecorder(TestLogRecorder):
    """The recorder the embedded store runs: every insert also moves the signed head."""

    def create_recorder(self) -> LogRecorder:
        recorder = HeadKeepingRecorder(self.new_file())
        recorder.create_table()
        return recorder


def test_a_log_the_library_wrote_reads_the_same_and_takes_more(tmp_path: Path) -> None:
    """Stores written before planledger kept its own recorder (the library's SQLite
    recorder, its tables) open as they were: every event at its position, and an append
    continues the log."""
    path = str(tmp_path / "ledger.sqlite")
    theirs = SQLiteApplicationRecorder(SQLiteDatastore(path, originator_id_type="text"))
    theirs.create_table()
    written = [StoredEvent(originator_id=f"step-{n % 3}", originator_version=n // 3 + 1,
                           topic="StepClaimed", state=f"state {n}".encode())
               for n in range(7)]
    theirs.insert_events(written)
    expected = theirs.select_notifications(start=None, limit=100)
    theirs.datastore.close()

    file = SQLiteFile(path)
    ours = HeadKeepingRecorder(file)
    ours.create_table()
    assert ours.select_notifications(start=None, limit=100) == expected
    assert ours.select_events("step-1") == [e for e in written if e.originator_id == "step-1"]
    more = StoredEvent(originator_id="step-0", originator_version=4, topic="StepDone",
                       state=b"done")
    assert ours.insert_events([more]) == [8]
    assert ours.max_notification_id() == 8
    file.close()
