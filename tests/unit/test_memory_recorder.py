"""The in-process recorder reads the log as the library's does: its own answer to a read at
the log's end must not change what any read returns."""

import itertools
import uuid

from eventsourcing.persistence import StoredEvent
from eventsourcing.popo import POPOApplicationRecorder

from planledger.infra.memory_answers import AnswerKeepingRecorder


def _events(count: int) -> list[StoredEvent]:
    stream = uuid.uuid4()
    return [StoredEvent(stream, version, "odd" if version % 2 else "even", b"{}")
            for version in range(1, count + 1)]


def test_reads_the_log_as_the_librarys_recorder_does() -> None:
    for size in range(4):
        ours, theirs = AnswerKeepingRecorder(), POPOApplicationRecorder()
        events = _events(size)
        if events:
            ours.insert_events(events)
            theirs.insert_events(events)
        for start, limit, stop, topics, inclusive in itertools.product(
                (None, -1, 0, 1, 2, 3, 4, 5), (1, 2, 10), (None, 0, 1, 2, 5),
                ((), ("odd",)), (True, False)):
            asked = dict(start=start, limit=limit, stop=stop, topics=topics,
                         inclusive_of_start=inclusive)
            assert ours.select_notifications(**asked) == theirs.select_notifications(
                **asked), (size, asked)


def test_nothing_new_at_the_end_and_then_what_lands() -> None:
    recorder = AnswerKeepingRecorder()
    assert recorder.select_notifications(0, 10, inclusive_of_start=False) == []
    recorder.insert_events(_events(2))
    assert [n.id for n in recorder.select_notifications(
        0, 10, inclusive_of_start=False)] == [1, 2]
    assert recorder.select_notifications(2, 10, inclusive_of_start=False) == []
    assert recorder.select_notifications(3, 10) == []
