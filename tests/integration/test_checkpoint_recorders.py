"""The checkpoint recorders (in this process, SQLite, PostgreSQL) keep their promise
(projections.checkpoints): a checkpoint only moves forward, even with several processes
saving at once; a state loads only at the position tracked for it; forgetting starts
over. The SQLite and PostgreSQL ones write tables eventsourcing's tracking recorder made
before they had statements of their own, and read what it wrote."""

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from eventsourcing.persistence import IntegrityError, Tracking
from eventsourcing.sqlite import SQLiteDatastore, SQLiteTrackingRecorder

from planledger.infra.sqlite_checkpoints import checkpoint_path, sqlite_checkpoints
from planledger.projections.checkpoints import CheckpointRecorder, MemoryCheckpointRecorder
from tests.support.postgres import fresh_schema

Opener = Callable[[], CheckpointRecorder]
NAME = "ReadModel"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    if request.param == "memory":
        shared = MemoryCheckpointRecorder()
        yield lambda: shared
    elif request.param == "sqlite":
        db = str(tmp_path / "ledger.sqlite")
        yield lambda: sqlite_checkpoints(db)
    else:
        from planledger.infra.pg_checkpoints import postgres_checkpoints

        with fresh_schema() as db:  # `db init` made the checkpoint tables
            yield lambda: postgres_checkpoints(db)


def test_a_checkpoint_only_moves_forward(opener: Opener) -> None:
    recorder = opener()
    assert recorder.load_checkpoint(NAME) is None and recorder.max_tracking_id(NAME) is None
    assert recorder.save_checkpoint(Tracking(NAME, 5), b"five")
    assert not recorder.save_checkpoint(Tracking(NAME, 5), b"again")
    assert not recorder.save_checkpoint(Tracking(NAME, 3), b"older")
    assert recorder.load_checkpoint(NAME) == (5, b"five")
    assert recorder.save_checkpoint(Tracking(NAME, 9), b"nine")
    assert recorder.load_checkpoint(NAME) == (9, b"nine")
    assert recorder.max_tracking_id(NAME) == 9
    assert recorder.load_checkpoint("Other") is None
    with pytest.raises(IntegrityError):
        recorder.insert_tracking(Tracking(NAME, 9))
    recorder.insert_tracking(Tracking(NAME, 12))  # a position ahead of the state ...
    assert recorder.load_checkpoint(NAME) is None  # ... vouches for no state
    recorder.forget(NAME)
    assert recorder.max_tracking_id(NAME) is None
    assert recorder.save_checkpoint(Tracking(NAME, 2), b"two")
    assert recorder.load_checkpoint(NAME) == (2, b"two")
    recorder.close()


def test_savers_at_once_leave_the_newest(opener: Opener) -> None:
    recorders = [opener() for _ in range(4)]
    start = threading.Barrier(len(recorders))
    saved: list[int] = []

    def save(recorder: CheckpointRecorder, first: int) -> None:
        start.wait()
        for position in range(first, 40, len(recorders)):
            if recorder.save_checkpoint(Tracking(NAME, position), str(position).encode()):
                saved.append(position)

    threads = [threading.Thread(target=save, args=(r, i + 1)) for i, r in enumerate(recorders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert recorders[0].load_checkpoint(NAME) == (max(saved), str(max(saved)).encode())
    assert max(saved) >= 36  # every saver's last position is one of the last four
    for recorder in recorders:
        recorder.close()


def test_sqlite_reads_what_the_librarys_tracking_recorder_made(tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.sqlite")
    made = SQLiteTrackingRecorder(SQLiteDatastore(str(checkpoint_path(db))))
    made.create_table()
    made.insert_tracking(Tracking(NAME, 7))
    made.datastore.close()
    recorder = sqlite_checkpoints(db)
    assert recorder.max_tracking_id(NAME) == 7
    assert not recorder.save_checkpoint(Tracking(NAME, 7), b"seven")
    assert recorder.save_checkpoint(Tracking(NAME, 8), b"eight")
    assert recorder.load_checkpoint(NAME) == (8, b"eight")
    recorder.close()
