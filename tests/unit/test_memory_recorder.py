"""The in-process recorder reads the log as the library's does: its own answer to a read at
the log's end must not change what any read returns."""

import itertools
import uuid

from eventsourcing.persistence import IntegrityError, StoredEvent
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


def test_reads_a_stream_as_the_librarys_recorder_does() -> None:
    ours, theirs = AnswerKeepingRecorder(), POPOApplicationRecorder()
    events = _events(5)
    for recorder in (ours, theirs):
        recorder.insert_events(events[:2])
        recorder.insert_events(_events(3))  # another stream between
        recorder.insert_events(events[2:])
    for gt, lte, desc, limit in itertools.product((None, 0, 2, 5), (None, 1, 3, 9),
                                                  (False, True), (None, 1, 2)):
        asked = dict(gt=gt, lte=lte, desc=desc, limit=limit)
        assert ours.select_events(events[0].originator_id, **asked) == theirs.select_events(
            events[0].originator_id, **asked), asked
    assert ours.max_notification_id() == theirs.max_notification_id() == 8


def test_a_version_taken_refuses_the_whole_write() -> None:
    recorder = AnswerKeepingRecorder()
    events = _events(3)
    recorder.insert_events(events[:2])
    for refused in ([events[2], events[1]], [events[2], events[2]]):
        try:
            recorder.insert_events(refused)
        except IntegrityError:
            pass
        else:
            raise AssertionError(f"{refused} was written")
    assert recorder.max_notification_id() == 2
    assert recorder.select_events(events[0].originator_id) == events[:2]
