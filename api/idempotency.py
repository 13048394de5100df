"""Idempotent writes: a retry with the same key gets the first answer and appends nothing.

This is one middleware around `Ledger.execute`, the same for every command.

The answer is stored as an `Answer` under a key made from the acting session and the
caller's Idempotency-Key. It is attached to the append that carries the command's outcome
(`ledger.execution.Attach`). The store writes it to a table beside the event log, in the
same transaction (`ledger.answers`). So the answer lands with the write or not at all, it
survives restarts, and every replica sees it. Two concurrent retries conflict on the key:
one lands, and the other reads the first one's answer. A refusal is an answer too, and a
retry gets the same error. Some commands answer without a decision of their own: a refusal
before any decision, or a claim-next that found nothing. Their answer is recorded alone.

Answers are kept for a retention window, measured on the ledger's clock
(`PLANLEDGER_IDEMPOTENCY_RETENTION`, in seconds; default one day). A retry inside the
window gets its first answer byte for byte. After the window the key is forgotten, and the
request counts as new. Each recorded answer also drops the expired ones. This keeps the
event log for ledger facts only, and keeps the answers table at one window's size however
long a server runs. Older stores kept answers in the log as `AnswerRecorded` events; those
are still read, and they expire the same way.

The key is an HMAC of the session and the caller's key, under a key derived from the
store's secret. A plain hash would let anyone who reads the store test guessed keys
offline. The caller learns whether its answer is the first or a replay
(`Answered.replayed`), so an operation can hide what only the first caller may see.
"""

import hashlib
import hmac
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from planledger.api.derived_keys import IDEMPOTENCY_STREAMS, derived_key
from planledger.api.errors import BadIdempotencyKey, IdempotencyKeyReused, Replayed, problem
from planledger.api.runtime import Runtime
from planledger.ledger.answers import Answer
from planledger.ledger.commands import Command
from planledger.ledger.domain.errors import LedgerError
from planledger.ledger.execution import Attach, Outcome
from planledger.ledger.store import ConflictError

R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)
STREAM_PREFIX = "idem:"
MAX_KEY = 200
RETENTION_VAR = "PLANLEDGER_IDEMPOTENCY_RETENTION"
DEFAULT_RETENTION_SECONDS = 24 * 3600
# Shorter would forget answers while clients still retry, or before a slow write is done.
MIN_RETENTION_SECONDS = 60


@dataclass(frozen=True)
class Answered(Generic[M]):
    """A write's answer, and whether it is a replay.

    `replayed` is true when an earlier try or a concurrent retry recorded the answer,
    and false when this call recorded it."""

    model: M
    replayed: bool


class AlreadyAnswered(Exception):
    """A concurrent retry recorded the answer first."""


@dataclass(frozen=True)
class Write(Generic[R, M]):
    """One command to answer idempotently.

    `run` executes the command with an attachment for the answer record, `render` turns
    its result into a response schema, and `out` reads a recorded answer back."""

    run: Callable[[Attach | None], R]
    render: Callable[[R], M]
    out: type[M]


def check_key(key: str) -> str:
    if not 1 <= len(key) <= MAX_KEY or not key.isprintable() or not key.isascii():
        raise BadIdempotencyKey(f"Idempotency-Key must be 1-{MAX_KEY} printable ASCII "
                                   "characters")
    return key


def fingerprint(command: Command[Any]) -> str:
    """A hash of the operation and its arguments; equal hashes mean the same request.

    The actor is left out because the key is already scoped to the actor."""
    fields: dict[str, Any] | None = getattr(command, "__dict__", None)
    if fields is not None and all(map(_plain, fields.values())):
        # This equals what asdict gives, without its deep copy. Most commands hold only
        # strings and numbers, and their JSON text is the same either way.
        args = {k: v for k, v in fields.items() if k != "actor"}
    else:
        args = {k: v for k, v in asdict(command).items() if k != "actor"}  # type: ignore[call-overload]
    text = json.dumps([command.name, args], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: object) -> bool:
    """Whether the value is a scalar or a tuple of scalars.

    For such values asdict changes nothing that JSON would see."""
    kind = type(value)
    return kind in _SCALARS or (kind is tuple and all(
        type(item) in _SCALARS for item in value))  # type: ignore[attr-defined]


def retention_from_env() -> timedelta:
    """How long answers are kept: $PLANLEDGER_IDEMPOTENCY_RETENTION seconds, else a day."""
    raw = os.environ.get(RETENTION_VAR) or str(DEFAULT_RETENTION_SECONDS)
    if not raw.isdigit() or int(raw) < MIN_RETENTION_SECONDS:
        raise ValueError(f"{RETENTION_VAR}={raw!r}: give the seconds idempotent answers are "
                         f"kept, a whole number of at least {MIN_RETENTION_SECONDS}")
    return timedelta(seconds=int(raw))


class Idempotency:
    def __init__(self, runtime: Runtime, retention: timedelta | None = None) -> None:
        self.runtime = runtime
        self.retention = retention if retention is not None else retention_from_env()
        self._key: bytes | None = None  # derived on first use, because that reads the secret

    def stream(self, scope: str | None, key: str) -> str:
        if self._key is None:
            self._key = derived_key(self.runtime.secret, IDEMPOTENCY_STREAMS)
        text = f"{scope or '-'}\n{check_key(key)}".encode()
        return STREAM_PREFIX + hmac.new(self._key, text, hashlib.sha256).hexdigest()[:48]

    def lookup(self, stream: str) -> Answer | None:
        """The answer kept under the key, unless it expired."""
        found = self.runtime.store.answer(stream)
        if found is None or found.recorded_at < self._expired_before():
            return None
        return found

    def _expired_before(self) -> datetime:
        return self.runtime.ledger.clock.now() - self.retention

    def answer(self, write: Write[R, M], key: str, scope: str | None, request: str,
               ) -> Answered[M]:
        """The write's answer: either recorded by this call, or replayed from an earlier one."""
        stream = self.stream(scope, key)
        if (found := self.lookup(stream)) is not None:
            return Answered(self._replay(write, found, request), replayed=True)
        rider = _Rider(self, write, stream, scope, request)
        result: R | None = None
        failure: Exception | None = None
        try:
            result = write.run(rider)
        except (LedgerError, AlreadyAnswered) as error:
            failure = error
        # Our record landed if the last outcome carried it and its append held. That is
        # the case when the command returned, or raised that outcome's own refusal. We
        # still hold the record we built, so we answer without reading it back.
        offered = rider.offered
        if offered is not None and (failure is None or failure is offered.decision.refusal):
            assert rider.given is not None, "an offered outcome carries our record"
            return Answered(_first(write, rider.given), replayed=False)
        if (found := self.lookup(stream)) is not None:  # a concurrent retry recorded it
            return Answered(self._replay(write, found, request), replayed=True)
        if isinstance(failure, AlreadyAnswered):
            raise RuntimeError("an idempotent answer vanished")  # a bug: logged as a 500
        given = _answer(write, result, failure)
        if given.status >= 500 and failure is not None:
            raise failure  # a transient failure (contention) is not recorded; a retry runs again
        try:
            self.runtime.store.append([self._record(stream, scope, request, given)])
        except ConflictError:  # a concurrent retry recorded it first
            return Answered(self._replay(write, self._must(stream), request), replayed=True)
        return Answered(_first(write, given), replayed=False)

    def _must(self, stream: str) -> Answer:
        found = self.lookup(stream)
        if found is None:
            raise RuntimeError(f"idempotency record {stream} missing after its append")
        return found

    def _record(self, stream: str, scope: str | None, request: str,
                given: "_Given[Any]") -> Answer:
        now = self.runtime.ledger.clock.now()
        return Answer(stream, scope, request, given.status, given.body, now,
                      drops_before=now - self.retention)

    @staticmethod
    def _replay(write: Write[R, M], found: Answer, request: str) -> M:
        if found.request != request:
            raise IdempotencyKeyReused("Idempotency-Key was already used for a different "
                                       "request; use a new key for a new request")
        if found.status >= 400:
            raise Replayed(found.status, found.body)
        return write.out.model_validate(found.body)


@dataclass(frozen=True)
class _Given(Generic[M]):
    """An answer this process built for its record.

    `body` is the recorded dump of `model`; `model` is None for a refusal."""

    status: int
    body: dict[str, Any]
    model: M | None


def _answer(write: Write[R, M], result: R | None, failure: Exception | None) -> _Given[M]:
    if failure is not None:
        status, body = problem(failure)
        return _Given(status, body.model_dump(mode="json", exclude_none=True), None)
    model = write.render(result)  # type: ignore[arg-type]
    return _Given(200, model.model_dump(mode="json"), model)


def _first(write: Write[R, M], given: _Given[M]) -> M:
    """The first answer, exactly as a later replay of its record would give it.

    A refusal is raised as `Replayed`. A result is returned as the rendered schema when
    its type is `write.out`, since validating its dump would give an equal value. Any
    other type is validated from the body, as a replay does."""
    if given.status >= 400:
        raise Replayed(given.status, given.body)
    if type(given.model) is write.out:
        return given.model
    return write.out.model_validate(given.body)


class _Rider:
    """Attaches the answer record to the outcome that answers the command."""

    def __init__(self, owner: Idempotency, write: Write[Any, Any], stream: str,
                 scope: str | None, request: str) -> None:
        self.owner, self.write, self.stream = owner, write, stream
        self.scope, self.request = scope, request
        self.calls = 0
        self.offered: Outcome[Any] | None = None  # latest outcome, if it carries our record
        self.given: _Given[Any] | None = None  # the answer in that record

    def __call__(self, outcome: Outcome[Any]) -> list[Answer]:
        self.calls += 1
        self.offered = None
        if self.calls > 1 and self.owner.lookup(self.stream) is not None:
            raise AlreadyAnswered(self.stream)
        refusal = outcome.decision.refusal
        self.given = _answer(self.write, None if refusal else outcome.result, refusal)
        self.offered = outcome
        return [self.owner._record(self.stream, self.scope, self.request, self.given)]
