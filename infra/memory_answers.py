"""The in-process store (`--db memory`): the library's, keeping idempotent answers beside
its log (ledger.answers) as infra.sqlite_answers does on disk: checked and written under
the lock the events are, so both land or neither."""

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import ApplicationRecorder, IntegrityError, StoredEvent
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
            self._answers = {key: kept for key, kept in self._answers.items()
                             if not any(_expired(kept, a) for a in answers)}
            self._answers.update((a.key, a) for a in answers)
        return ids

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
