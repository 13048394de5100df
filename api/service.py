"""What every interface calls (HTTP, MCP, the CLI, the console): a command value in, its
answer schema out.

`execute` runs the command's one handler (`Ledger.execute`) through the middleware every
command shares, once: the deployment's limits and defaults, the metrics, and, given an
idempotency key, recording or replaying its answer. The result is rendered once
(`api.rendering`). Identity is settled before: a command's `actor` is who the caller
proved it speaks for (a session, the admin or the local operator). No rule lives here.
"""

from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel

from planledger.api import reads, rendering
from planledger.api.idempotency import Answered, Idempotency, Write, fingerprint
from planledger.api.identity import Identity
from planledger.api.metrics import Metrics
from planledger.api.runtime import Runtime
from planledger.api.schemas import TOKEN_ONLY_FIRST, ReadyOut, SessionStartedOut, SessionStartOut
from planledger.api.settings import Settings
from planledger.ledger import commands as c
from planledger.ledger.commands import Command
from planledger.ledger.domain.errors import LedgerError
from planledger.ledger.execution import Attach
from planledger.projections.timeline import TimelineModel

M = TypeVar("M", bound=BaseModel)
Key = str | None


class Service:
    """`Service(runtime, settings, identity)`: what HTTP, MCP, the CLI and the console call."""

    def __init__(self, runtime: Runtime, settings: Settings, identity: Identity,
                 metrics: Metrics | None = None) -> None:
        self.runtime = runtime
        self.ledger = runtime.ledger
        self.settings = settings
        self.identity = identity
        self.metrics = metrics or Metrics()
        self.idempotency = Idempotency(runtime)
        self.timelines = TimelineModel(runtime.store, reads=runtime.reads)  # one fold

    def execute(self, command: Command[Any], key: Key = None) -> BaseModel:
        """The command's answer: run now, or replayed given a key used before."""
        return self._answered(command, key).model

    def answer(self, command: Command[Any], out: type[M], key: Key = None) -> M:
        """`execute`, typed: the answer as `out` (the command's answer schema)."""
        model = self.execute(command, key)
        assert isinstance(model, out), f"{command.name} answers {type(model).__name__}"
        return model

    def start_session(self, name: str | None = None, key: Key = None) -> SessionStartOut:
        """Start a session. Its token is never recorded, and a replay (the same key) does
        not carry it: whoever repeats a key is not thereby the session's first caller."""
        answered = self._answered(c.StartSession(name), key)
        started = answered.model
        assert isinstance(started, SessionStartedOut)
        if answered.replayed:
            return SessionStartOut(**dict(started), token=None, replayed=True,
                                   note=TOKEN_ONLY_FIRST)
        return SessionStartOut(**dict(started),
                               token=self.identity.token_for(started.session_id))

    def ready(self, slug: str, actor: str | None = None) -> ReadyOut:
        """The plan's ready, held and blocked steps; with an actor, the listing is recorded
        in its session stream (what the agent chose from)."""
        if actor:
            return self.answer(c.ListReady(slug, actor), ReadyOut)
        return reads.ready(self.runtime, slug)

    # --- the middleware -------------------------------------------------------------------

    def _answered(self, command: Command[Any], key: Key) -> Answered[BaseModel]:
        command = self._within_limits(command)
        out = rendering.ANSWERS[type(command)]
        write = Write(lambda attach: self._counted(command, attach),
                      lambda result: rendering.render(self.runtime, result), out)
        if key is None:
            return Answered(write.render(write.run(None)), replayed=False)
        scope = command.actor or None
        return self.idempotency.answer(write, key, scope, fingerprint(command))

    def _within_limits(self, command: Command[Any]) -> Command[Any]:
        """The deployment's limits and defaults, applied to any command they concern."""
        if isinstance(command, c.CreatePlan):
            self.settings.check_steps_per_request(len(command.steps))
        if isinstance(command, c.Claim | c.Heartbeat | c.ClaimNext) and (
                command.lease_seconds is None):
            return replace(command, lease_seconds=self.settings.lease_default)
        return command

    def _counted(self, command: Command[Any], attach: Attach | None) -> Any:
        try:
            result = self.ledger.execute(command, attach)
        except LedgerError as error:
            self.metrics.refused(error)
            raise
        self.metrics.observe(command, result)
        return result
