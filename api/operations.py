"""What every operation shares: the runtime, identity, metrics, idempotent running."""

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from planledger.api.idempotency import Answered, Idempotency, Write, fingerprint
from planledger.api.identity import Identity
from planledger.api.metrics import Metrics
from planledger.api.runtime import Runtime
from planledger.api.settings import Settings
from planledger.ledger.domain.errors import LedgerError
from planledger.projections.timeline import TimelineModel

R = TypeVar("R")
M = TypeVar("M", bound=BaseModel)
Key = str | None


class Operations:
    def __init__(self, runtime: Runtime, settings: Settings, identity: Identity,
                 metrics: Metrics | None = None) -> None:
        self.runtime = runtime
        self.ledger = runtime.ledger
        self.settings = settings
        self.identity = identity
        self.metrics = metrics or Metrics()
        self.idempotency = Idempotency(runtime)
        self.timelines = TimelineModel(runtime.store, reads=runtime.reads)  # one fold

    def _run(self, operation: str, args: dict[str, Any], write: Write[R, M], key: Key,
             scope: str | None) -> M:
        return self._answer(operation, args, write, key, scope).model

    def _answer(self, operation: str, args: dict[str, Any], write: Write[R, M], key: Key,
                scope: str | None) -> Answered[M]:
        """`_run`, telling whether the answer replays one recorded before this call."""
        if key is None:
            return Answered(write.render(write.command()), replayed=False)
        return self.idempotency.answer(write, key, scope, fingerprint(operation, args))

    def _counted(self, command: Callable[[], R]) -> Callable[[], R]:
        def run() -> R:
            try:
                return command()
            except LedgerError as error:
                self.metrics.refused(error)
                raise
        return run

