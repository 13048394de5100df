"""Idempotent writes: a retried write with the same key gets the first answer, appends nothing.

The answer is recorded as an `AnswerRecorded` event, version 1 of a stream named by the
acting session and the key, appended in the same transaction as the write's own events
(see `ledger.riders`). So the record survives restarts, every replica sees it, and two
concurrent retries conflict on that stream: one lands, the other reads its answer.
A refusal is an answer too, and replays as the same error. Writes whose answer comes
with no decision (a claim-next that found nothing) record it on its own.

The stream's name is a MAC of the session and the key under a key derived from the
store's secret: the log is public (`/api/log`), and a bare hash of a key could be matched
offline against guessed keys. A caller learns whether its answer is the first or a replay
(`Answered.replayed`), so an operation can withhold what only the first caller may see.
"""

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from planledger.api.derived_keys import IDEMPOTENCY_STREAMS, derived_key
from planledger.api.errors import BadIdempotencyKey, IdempotencyKeyReused, Replayed, problem
from planledger.api.runtime import Runtime
from planledger.ledger.answers import AnswerRecorded
from planledger.ledger.domain.claims import Decision
from planledger.ledger.domain.errors import LedgerError
from planledger.ledger.riders import riding
from planledger.ledger.store import ConflictError

R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)
STREAM_PREFIX = "idem:"
MAX_KEY = 200


@dataclass(frozen=True)
class Answered(Generic[M]):
    """A write's answer, and whether it was recorded before this call (by an earlier try
    or a concurrent twin) rather than by it."""

    model: M
    replayed: bool


class AlreadyAnswered(Exception):
    """A concurrent retry recorded the answer first."""


@dataclass(frozen=True)
class Write(Generic[R, M]):
    """One write: run it, render its result, and recognise the decision that answers it."""

    command: Callable[[], R]
    render: Callable[[R], M]
    out: type[M]
    # What the command returns when `decision` is its answer; None when it is not (a
    # claim-next's lost race). Refusals answer unless `refusals_answer` is False.
    of_decision: Callable[[Decision], R | None]
    refusals_answer: bool = True


def check_key(key: str) -> str:
    if not 1 <= len(key) <= MAX_KEY or not key.isprintable() or not key.isascii():
        raise BadIdempotencyKey(f"Idempotency-Key must be 1-{MAX_KEY} printable ASCII "
                                   "characters")
    return key


def fingerprint(operation: str, args: dict[str, Any]) -> str:
    text = json.dumps([operation, args], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class Idempotency:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._key: bytes | None = None  # derived when first needed, as the secret is read

    def stream(self, scope: str | None, key: str) -> str:
        if self._key is None:
            self._key = derived_key(self.runtime.secret, IDEMPOTENCY_STREAMS)
        text = f"{scope or '-'}\n{check_key(key)}".encode()
        return STREAM_PREFIX + hmac.new(self._key, text, hashlib.sha256).hexdigest()[:48]

    def lookup(self, stream: str) -> AnswerRecorded | None:
        for event in self.runtime.store.stream(stream):
            if isinstance(event, AnswerRecorded):
                return event
        return None

    def run(self, write: Write[R, M], key: str, scope: str | None, request: str) -> M:
        """The write's answer: recorded first, or replayed from the first time."""
        return self.answer(write, key, scope, request).model

    def answer(self, write: Write[R, M], key: str, scope: str | None, request: str,
               ) -> Answered[M]:
        """`run`, telling whether the answer was recorded by this call."""
        stream = self.stream(scope, key)
        if (found := self.lookup(stream)) is not None:
            return Answered(self._replay(write, found, request), replayed=True)
        rider = _Rider(self, write, stream, scope, request)
        result: R | None = None
        failure: Exception | None = None
        with riding(rider):
            try:
                result = write.command()
            except (LedgerError, AlreadyAnswered) as error:
                failure = error
        if (found := self.lookup(stream)) is not None:  # ours, or a concurrent twin's
            # Ours when the command's last decision carried our record and its append held
            # (the command returned, or raised that decision's own refusal after it).
            offered = rider.offered
            ours = offered is not None and (failure is None or failure is offered.refusal)
            return Answered(self._replay(write, found, request), replayed=not ours)
        if isinstance(failure, AlreadyAnswered):
            raise RuntimeError("an idempotent answer vanished")  # cannot happen: logged, 500
        answer = _answer(write, result, failure)
        if answer[0] >= 500 and failure is not None:
            raise failure  # a passing failure (contention) is not the answer: retry afresh
        ours = True
        try:
            self.runtime.store.append([self._record(stream, scope, request, answer)])
        except ConflictError:  # a concurrent twin recorded it first
            ours = False
        return Answered(self._replay(write, self._must(stream), request), replayed=not ours)

    def _must(self, stream: str) -> AnswerRecorded:
        found = self.lookup(stream)
        if found is None:
            raise RuntimeError(f"idempotency record {stream} missing after its append")
        return found

    def _record(self, stream: str, scope: str | None, request: str,
                answer: tuple[int, dict[str, Any]]) -> AnswerRecorded:
        return AnswerRecorded(stream, 1, self.runtime.ledger.clock.now(), scope, request,
                              answer[0], answer[1])

    @staticmethod
    def _replay(write: Write[R, M], found: AnswerRecorded, request: str) -> M:
        if found.request != request:
            raise IdempotencyKeyReused("Idempotency-Key was already used for a different "
                                       "request; use a new key for a new request")
        if found.status >= 400:
            raise Replayed(found.status, found.body)
        return write.out.model_validate(found.body)


def _answer(write: Write[R, M], result: R | None, failure: Exception | None,
            ) -> tuple[int, dict[str, Any]]:
    if failure is not None:
        status, body = problem(failure)
        return status, body.model_dump(mode="json", exclude_none=True)
    return 200, write.render(result).model_dump(mode="json")  # type: ignore[arg-type]


class _Rider:
    """Adds the answer record to the decision that answers the write."""

    def __init__(self, owner: Idempotency, write: Write[Any, Any], stream: str,
                 scope: str | None, request: str) -> None:
        self.owner, self.write, self.stream = owner, write, stream
        self.scope, self.request = scope, request
        self.calls = 0
        self.offered: Decision | None = None  # the latest decision, if it carries our record

    def __call__(self, decision: Decision) -> list[AnswerRecorded]:
        self.calls += 1
        self.offered = None
        if self.calls > 1 and self.owner.lookup(self.stream) is not None:
            raise AlreadyAnswered(self.stream)
        if decision.refusal is not None:
            if not self.write.refusals_answer:
                return []
            answer = _answer(self.write, None, decision.refusal)
        else:
            result = self.write.of_decision(decision)
            if result is None:
                return []
            answer = _answer(self.write, result, None)
        self.offered = decision
        return [self.owner._record(self.stream, self.scope, self.request, answer)]
