"""The in-process store (`--db memory`): a log of our own behind the library's public
recorder interface, keeping idempotent answers beside it (ledger.answers) as
infra.sqlite_answers does on disk: checked and written under the lock the events are, so
both land or neither."""

import bisect
import threading
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from eventsourcing.persistence import (
    ApplicationRecorder,
    IntegrityError,
    Notification,
    StoredEvent,
    Subscription,
)
from eventsourcing.popo import POPOFactory

from planledger.ledger.answers import Answer


class AnswerKeepingRecorder(ApplicationRecorder):
    """An in-process log (the library's public recorder interface, our own table) with a
    table of answers by key, both written under one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[StoredEvent] = []  # notification id n is self._events[n - 1]
        self._versions: dict[str, dict[int, int]] = {}  # stream -> version -> index
        self._ordered: dict[str, list[int]] = {}  # stream -> its versions, ascending
        self._answers: dict[str, Answer] = {}

    def insert_events(self, stored_events: Sequence[StoredEvent],
                      **kwargs: Any) -> Sequence[int] | None:
        answers: Sequence[Answer] = kwargs.get("answers", ())
        with self._lock:
            self._check_new(stored_events, answers)
            ids = []
            for event in stored_events:
                self._events.append(event)
                stream = self._versions.setdefault(str(event.originator_id), {})
                stream[event.originator_version] = len(self._events) - 1
                bisect.insort(self._ordered.setdefault(str(event.originator_id), []),
                              event.originator_version)  # at the end, but for a stray
                ids.append(len(self._events))
            self._keep(answers)
        return ids

    def _check_new(self, stored_events: Sequence[StoredEvent],
                   answers: Sequence[Answer]) -> None:
        """Refuse the whole write when an event's version is taken (or named twice in it),
        or a live answer is kept under one of the answers' keys already."""
        written = {(str(e.originator_id), e.originator_version) for e in stored_events}
        if len(written) < len(stored_events):
            raise IntegrityError("the events written are not unique")
        for stream, version in written:
            if version in self._versions.get(stream, {}):
                raise IntegrityError(f"version {version} of {stream} is recorded already")
        for answer in answers:
            kept = self._answers.get(answer.key)
            if kept is not None and not _expired(kept, answer):
                raise IntegrityError(f"an answer is kept under {answer.key} already")

    def _keep(self, answers: Sequence[Answer]) -> None:
        if answers:
            self._drop_expired(answers)
            for answer in answers:
                self._answers.pop(answer.key, None)  # an expired key's new answer: at the end
                self._answers[answer.key] = answer

    def _drop_expired(self, answers: Sequence[Answer]) -> None:
        """Drop the answers that expired, oldest first: the table is in the order they were
        recorded (a process's clock never runs back), so only the expired ones are looked
        at, not the whole table on every write. One that lingers is harmless: a lookup
        judges expiry itself."""
        cutoffs = [a.drops_before for a in answers if a.drops_before is not None]
        if not cutoffs:
            return
        cutoff = max(cutoffs)
        while self._answers:
            oldest = next(iter(self._answers))
            if self._answers[oldest].recorded_at >= cutoff:
                return
            del self._answers[oldest]

    def select_events(self, originator_id: UUID | str, *, gt: int | None = None,
                      lte: int | None = None, desc: bool = False,
                      limit: int | None = None) -> Sequence[StoredEvent]:
        name = str(originator_id)
        with self._lock:
            stream = self._versions.get(name)
            ordered = self._ordered.get(name)
            if stream is None or ordered is None or (gt is not None and gt >= ordered[-1]):
                return []  # the usual answer to a cached state's "anything new?"
            # Every load reads a stream from a version on: a range of its ordered versions,
            # not a pass over all of them.
            low = 0 if gt is None else bisect.bisect_right(ordered, gt)
            high = len(ordered) if lte is None else bisect.bisect_right(ordered, lte)
            versions = ordered[low:high]
            if desc:
                versions.reverse()
            return [self._events[stream[v]] for v in versions[:limit]]

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """At most `limit` notifications from id `start` (past it, if not inclusive) up to
        `stop`, of the `topics` if any are named."""
        first = 1 if start is None else max(start + (0 if inclusive_of_start else 1), 1)
        with self._lock:
            last = len(self._events) if stop is None else min(stop, len(self._events))
            if not topics:  # no event is skipped: read no more than the limit
                last = min(last, first + limit - 1)
            found: list[Notification] = []
            for number in range(first, last + 1):  # none when nothing is new: the usual
                event = self._events[number - 1]
                if topics and event.topic not in topics:
                    continue
                found.append(Notification(
                    id=number, originator_id=event.originator_id,
                    originator_version=event.originator_version, topic=event.topic,
                    state=event.state))
                if len(found) == limit:
                    break
            return found

    def max_notification_id(self) -> int | None:
        with self._lock:
            return len(self._events) or None

    def subscribe(self, gt: int | None = None,
                  topics: Sequence[str] = ()) -> Subscription[ApplicationRecorder]:
        """Not offered: planledger's readers follow the log by position
        (projections.follower), and nothing here pushes to them."""
        raise NotImplementedError("the in-process store's readers poll the log by position")

    def select_answer(self, key: str) -> Answer | None:
        """The answer kept under `key` (ledger.answers.AnswerTable)."""
        with self._lock:
            return self._answers.get(key)


def _expired(kept: Answer, writing: Answer) -> bool:
    return writing.drops_before is not None and kept.recorded_at < writing.drops_before


class Factory(POPOFactory):
    """The library's in-process factory with the answer-keeping recorder."""

    def application_recorder(self) -> ApplicationRecorder:
        return AnswerKeepingRecorder()
