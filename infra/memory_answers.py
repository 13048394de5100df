"""The in-process store (`--db memory`): the library's, keeping idempotent answers beside
its log (ledger.answers) as infra.sqlite_answers does on disk: checked and written under
the lock the events are, so both land or neither."""

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import (
    ApplicationRecorder,
    IntegrityError,
    Notification,
    StoredEvent,
)
from eventsourcing.popo import POPOApplicationRecorder, POPOFactory

from planledger.ledger.answers import Answer


class AnswerKeepingRecorder(POPOApplicationRecorder):
    """The library's in-process recorder, with a table of answers by key."""

    def __init__(self) -> None:
        super().__init__()
        self._answers: dict[str, Answer] = {}

    def _assert_uniqueness(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> None:
        super()._assert_uniqueness(stored_events, **kwargs)
        for answer in kwargs.get("answers", ()):
            kept = self._answers.get(answer.key)
            if kept is not None and not _expired(kept, answer):
                raise IntegrityError(f"an answer is kept under {answer.key} already")

    def _update_table(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._update_table(stored_events, **kwargs)
        answers: Sequence[Answer] = kwargs.get("answers", ())
        if answers:
            self._drop_expired(answers)
            for answer in answers:
                self._answers.pop(answer.key, None)  # an expired key's new answer: at the end
                self._answers[answer.key] = answer
        return ids

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

    def select_notifications(
        self,
        start: int | None,
        limit: int,
        stop: int | None = None,
        topics: Sequence[str] = (),
        *,
        inclusive_of_start: bool = True,
    ) -> Sequence[Notification]:
        """The library's, answering "nothing new" at the log's end at once: its loop finds
        the end by raising and catching an IndexError, half the cost of a read model's
        usual read (there is seldom anything new)."""
        first = 1 if start is None else start + (0 if inclusive_of_start else 1)
        # Reading the length needs no lock: a log only grows, and an append racing this
        # read may land just after it either way.
        if first > len(self._stored_events):
            return []
        return super().select_notifications(start, limit, stop, topics,
                                            inclusive_of_start=inclusive_of_start)

    def select_answer(self, key: str) -> Answer | None:
        """The answer kept under `key` (ledger.answers.AnswerTable)."""
        with self._database_lock:
            return self._answers.get(key)


def _expired(kept: Answer, writing: Answer) -> bool:
    return writing.drops_before is not None and kept.recorded_at < writing.drops_before


class Factory(POPOFactory):
    """The library's in-process factory with the answer-keeping recorder."""

    def application_recorder(self) -> ApplicationRecorder:
        return AnswerKeepingRecorder()
