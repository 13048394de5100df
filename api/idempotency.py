"""Idempotent writes: a retried command with the same key gets the first answer and
appends nothing. A middleware around `Ledger.execute`, the same for every command.

The answer is kept as an `Answer` under a key named by the acting session and the
caller's key, attached to the append of the outcome that answers the command
(`ledger.execution.Attach`); the store writes it to a table beside the log, in the same
transaction (ledger.answers). So it lands atomically with the write or not at all,
survives restarts, and every replica sees it; two concurrent retries conflict on that key:
one lands, the other reads its answer. A refusal is an answer too, and replays as the
same error. A command answered with no decision of its own (a refusal before any
decision, a claim-next that found nothing) records it on its own.

Answers are kept for a retention window (`PLANLEDGER_IDEMPOTENCY_RETENTION`, seconds,
default a day), by the ledger's clock: a retry within it gets its first answer byte for
byte; after it, the key is forgotten and the request is taken as a new one (each write of
an answer drops the expired ones). So the log holds the ledger's facts only, and the
answers take one window's room however long a server runs. Stores written before kept
answers in the log (`AnswerRecorded`): those are still read, and expire the same way.

The key is a MAC of the session and the caller's key under a key derived from the store's
secret: a bare hash of a key could be matched offline against guessed keys by whoever
reads the store. A caller learns whether its answer is the first or a replay
(`Answered.replayed`), so an operation can withhold what only the first caller may see.
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
    """A write's answer, and whether it was recorded before this call (by an earlier try
    or a concurrent twin) rather than by it."""

    model: M
    replayed: bool


class AlreadyAnswered(Exception):
    """A concurrent retry recorded the answer first."""


@dataclass(frozen=True)
class Write(Generic[R, M]):
    """One command to answer idempotently: run it (attaching the answer record to the
    outcome that answers it), render its result, and read a recorded answer back."""

    run: Callable[[Attach | None], R]
    render: Callable[[R], M]
    out: type[M]


def check_key(key: str) -> str:
    if not 1 <= len(key) <= MAX_KEY or not key.isprintable() or not key.isascii():
        raise BadIdempotencyKey(f"Idempotency-Key must be 1-{MAX_KEY} printable ASCII "
                                   "characters")
    return key


def fingerprint(command: Command[Any]) -> str:
    """What makes two tries the same request: the operation and its arguments (the
    actor is the key's scope already)."""
    fields: dict[str, Any] | None = getattr(command, "__dict__", None)
    if fields is not None and all(map(_plain, fields.values())):
        # What asdict would give, without its deep copy: most commands hold strings and
        # numbers only, and the JSON text of either is the same.
        args = {k: v for k, v in fields.items() if k != "actor"}
    else:
        args = {k: v for k, v in asdict(command).items() if k != "actor"}  # type: ignore[call-overload]
    text = json.dumps([command.name, args], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _plain(value: object) -> bool:
    """Whether asdict leaves the value as JSON would see it anyway: a scalar, or a tuple
    of scalars."""
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
        self._key: bytes | None = None  # derived when first needed, as the secret is read

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
        """The write's answer: recorded by this call, or replayed from the first time."""
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
        # Ours when the last outcome offered carried our record and its append held (the
        # command returned, or raised that outcome's own refusal after it): the record is
        # kept as we made it, so it answers without being read back.
        offered = rider.offered
        if offered is not None and (failure is None or failure is offered.decision.refusal):
            assert rider.given is not None, "an offered outcome carries our record"
            return Answered(_first(write, rider.given), replayed=False)
        if (found := self.lookup(stream)) is not None:  # a concurrent twin's
            return Answered(self._replay(write, found, request), replayed=True)
        if isinstance(failure, AlreadyAnswered):
            raise RuntimeError("an idempotent answer vanished")  # cannot happen: logged, 500
        given = _answer(write, result, failure)
        if given.status >= 500 and failure is not None:
            raise failure  # a passing failure (contention) is not the answer: retry afresh
        try:
            self.runtime.store.append([self._record(stream, scope, request, given)])
        except ConflictError:  # a concurrent twin recorded it first
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
    """An answer this process made and recorded: its status and body (as recorded), and
    the schema it was rendered as (None for a refusal), whose dump the body is."""

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
    """The first answer, as a replay of its record gives it: the refusal raised as
    replayed, or the schema rendered, whose dump the record holds (validating that dump
    back gives an equal schema; any other type is read back as a replay reads it)."""
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
        self.offered: Outcome[Any] | None = None  # the latest outcome, if it carries our record
        self.given: _Given[Any] | None = None  # the answer that record holds

    def __call__(self, outcome: Outcome[Any]) -> list[Answer]:
        self.calls += 1
        self.offered = None
        if self.calls > 1 and self.owner.lookup(self.stream) is not None:
            raise AlreadyAnswered(self.stream)
        refusal = outcome.decision.refusal
        self.given = _answer(self.write, None if refusal else outcome.result, refusal)
        self.offered = outcome
        return [self.owner._record(self.stream, self.scope, self.request, self.given)]
