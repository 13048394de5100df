"""The one entry point that every interface calls: HTTP, MCP, the CLI and the console.

An interface passes in a command value and gets back the command's answer schema.

`execute` runs the command's handler (`Ledger.execute`) inside middleware that every
command shares: the deployment's limits and defaults, the metrics, and idempotency when
the caller gives a key. The result is rendered in one place (`api.rendering`). Identity
is settled before a command arrives here. Its `actor` is whoever the caller proved to be:
a session, a key, the admin or the local operator. This module checks that the actor's
role allows the command (`api.access`).
"""

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeGuard, TypeVar

from anyio import to_thread
from pydantic import BaseModel

from planledger.api import reads, rendering
from planledger.api.access import Access, new_key
from planledger.api.idempotency import Answered, Idempotency, Write, fingerprint
from planledger.api.identity import Identity
from planledger.api.metrics import Metrics
from planledger.api.pasted_credentials import PastedCredentials
from planledger.api.runtime import Runtime
from planledger.api.schemas import (
    TOKEN_ONLY_FIRST,
    ClaimNextOut,
    KeyIssuedOut,
    KeyOut,
    KeysOut,
    ReadyOut,
    SessionStartedOut,
    SessionStartOut,
)
from planledger.api.settings import Settings
from planledger.api.waiting import Attempt, Waiting
from planledger.ledger import commands as c
from planledger.ledger.commands import Command
from planledger.ledger.domain.access import digest_of
from planledger.ledger.domain.errors import InvalidInput, LedgerError
from planledger.ledger.domain.ids import PlanSlug
from planledger.ledger.execution import Attach
from planledger.ledger.references import with_step_ids
from planledger.projections.timeline import TimelineModel

M = TypeVar("M", bound=BaseModel)
Key = str | None
log = logging.getLogger("planledger.service")


class Service:
    """The operations that HTTP, MCP, the CLI and the console call."""

    def __init__(self, runtime: Runtime, settings: Settings, identity: Identity,
                 metrics: Metrics | None = None) -> None:
        self.runtime = runtime
        self.ledger = runtime.ledger
        self.settings = settings
        self.identity = identity
        self.access = Access(identity, runtime.reads, runtime.store)
        self.pasted = PastedCredentials(identity, runtime.reads)
        self.metrics = metrics or Metrics()
        self.idempotency = Idempotency(runtime)
        self.timelines = TimelineModel(runtime.store, reads=runtime.reads)  # one fold for all
        self.waiting = Waiting(runtime.reads, runtime.ledger.clock)

    def execute(self, command: Command[Any], key: Key = None) -> BaseModel:
        """Run the command and return its answer, or replay the answer for a reused key.

        A claim-next with `wait_seconds` blocks until it claims a step or its time is up.
        `execute_async` does the same wait without holding a thread."""
        return self._execute_within_limits(self._within_limits(command), key)

    def _execute_within_limits(self, command: Command[Any], key: Key) -> BaseModel:
        if _waits(command):
            return self.waiting.claim_next_blocking(command, self._attempt(command, key))
        return self._answered(command, key).model

    async def execute_async(self, command: Command[Any], key: Key = None) -> BaseModel:
        """`execute` for callers on an event loop.

        The command runs on a worker thread. A waiting claim-next waits on the loop
        itself, so it holds no thread while it waits (`api.waiting`)."""
        command = self._within_limits(command)
        if _waits(command):
            return await self.waiting.claim_next(command, self._attempt(command, key),
                                                 unclaim=self.release_departed)
        return await to_thread.run_sync(self._execute_within_limits, command, key)

    async def answer_async(self, command: Command[Any], out: type[M], key: Key = None) -> M:
        """`answer` for callers on an event loop (see `execute_async`)."""
        model = await self.execute_async(command, key)
        assert isinstance(model, out), f"{command.name} answers {type(model).__name__}"
        return model

    def answer(self, command: Command[Any], out: type[M], key: Key = None) -> M:
        """`execute`, with the answer checked to be of type `out`."""
        model = self.execute(command, key)
        assert isinstance(model, out), f"{command.name} answers {type(model).__name__}"
        return model

    def start_session(self, command: c.StartSession, key: Key = None) -> SessionStartOut:
        """Start a session and return its token.

        The token is never recorded, so a replay with the same key returns no token.
        Knowing a key does not prove that the caller is the one who started the session."""
        answered = self._answered(self._within_limits(command), key)
        started = answered.model
        assert isinstance(started, SessionStartedOut)
        if answered.replayed:
            return SessionStartOut(**dict(started), token=None, replayed=True,
                                   note=TOKEN_ONLY_FIRST)
        return SessionStartOut(**dict(started),
                               token=self.identity.token_for(started.session_id))

    def issue_key(self, name: str, role: str, actor: str) -> KeyIssuedOut:
        """Issue a new access key. This answer is the only place the key is ever shown."""
        key = new_key()
        issued = self.answer(c.IssueKey(name, role, digest_of(key), actor), KeyOut)
        return KeyIssuedOut(**dict(issued), key=key)

    def revoke_key(self, name: str, actor: str) -> KeyOut:
        return self.answer(c.RevokeKey(name, actor), KeyOut)

    def keys(self) -> KeysOut:
        """List every key name, live and revoked. The keys themselves are never listed."""
        with self.runtime.reads.reading() as (view, _):
            known = sorted(view.keys.values(), key=lambda k: k.name)
        return KeysOut(keys=[rendering.key_out(k) for k in known])

    def ready(self, slug: str, actor: str | None = None, limit: int | None = None,
              ) -> ReadyOut:
        """List the plan's ready, held and blocked steps.

        With `limit`, each list holds at most that many steps, and the counts are full.
        With an actor, the listing is recorded in the actor's session stream, so a replay
        shows what the agent saw before it chose."""
        if limit is not None:
            reads.check_page(limit)
        if actor:
            return self.answer(c.ListReady(slug, actor, limit), ReadyOut)
        return reads.ready(self.runtime, slug, limit=limit)

    # --- the middleware -------------------------------------------------------------------

    def _answered(self, command: Command[Any], key: Key, *, trying: bool = False,
                  ) -> Answered[BaseModel]:
        """Answer a command that has already passed `_within_limits`.

        `_within_limits` runs once per command, because its credential scan reads every
        text that the command carries."""
        out = rendering.ANSWERS[type(command)]
        def run(attach: Attach | None) -> Any:
            return self._counted(command, attach)

        write = Write(self._unless_nothing_yet(run) if trying else run,
                      lambda result: rendering.render(self.runtime, result), out)
        if key is None:
            return Answered(write.render(write.run(None)), replayed=False)
        scope = command.actor or None
        return self.idempotency.answer(write, key, scope, fingerprint(command))

    def _within_limits(self, command: Command[Any]) -> Command[Any]:
        """Apply the deployment's limits and defaults, and resolve step references to ids.

        References such as `plan#N` and `plan/key` are resolved here, once for every
        interface. The ledger, its log and its recordings then see step ids only."""
        command = with_step_ids(command, self.ledger.resolve_step)
        self.pasted.refuse_in(command)
        if isinstance(command, c.CreatePlan):
            self.settings.check_steps_per_request(len(command.steps))
        if isinstance(command, c.ClaimNext) and not (
                0 <= command.wait_seconds <= c.MAX_WAIT_SECONDS):
            raise InvalidInput("wait_seconds", f"{command.wait_seconds} is outside "
                                               f"0..{c.MAX_WAIT_SECONDS} seconds")
        if isinstance(command, c.Claim | c.Heartbeat | c.ClaimNext) and (
                command.lease_seconds is None):
            return replace(command, lease_seconds=self.settings.lease_default)
        return command

    def _counted(self, command: Command[Any], attach: Attach | None) -> Any:
        try:
            self.access.permit(command, self.ledger.clock.now())
            result = self.ledger.execute(command, attach)
            if isinstance(command, c.IssueKey | c.RevokeKey):
                # Interfaces check credentials against the read model's keys. Catch up now,
                # so that this replica honours the change from the next request on.
                self.runtime.reads.catch_up()
        except LedgerError as error:
            self.metrics.refused(error)
            raise
        self.metrics.observe(command, result)
        self.waiting.appended()
        return result

    # --- a claim-next that waits (api.waiting) ----------------------------------------

    def _attempt(self, command: c.ClaimNext, key: Key) -> Attempt:
        """One try of a waiting claim-next.

        The try returns the answer, or None when nothing is claimable yet and the plan is
        not finished. A None records nothing. The `final` try returns whatever it finds."""
        def attempt(final: bool) -> BaseModel | None:
            try:
                return self._answered(command, key, trying=not final).model
            except _NothingYet:
                return None
        return attempt

    def release_departed(self, answer: BaseModel) -> None:
        """Release a claim whose waiting caller left before it heard the answer.

        The step becomes free at once, and the release records the reason. If there is
        nothing left to release (say the session ended meanwhile), that is fine."""
        if not isinstance(answer, ClaimNextOut) or answer.claimed is None:
            return
        claimed = answer.claimed
        try:
            self.execute(c.Release(claimed.step_id, claimed.holder, claimed.fence,
                                   reason="caller_departed"))
        except LedgerError as error:
            log.info("a departed caller's claim of %s was let go of already: %s",
                     claimed.step_id, error)

    def _unless_nothing_yet(self, run: Callable[[Attach | None], Any],
                            ) -> Callable[[Attach | None], Any]:
        """Wrap `run` so that a try which finds nothing is not recorded as the answer.

        Such a try attaches nothing to its outcome. It raises `_NothingYet`, which passes
        through the idempotency middleware without a record. A finished plan is different:
        nothing is left to wait for, so its "all done" is the answer. That answer is
        returned and recorded like any write with no events."""
        def tried(attach: Attach | None) -> Any:
            skip: Attach | None = None if attach is None else (
                lambda outcome: [] if _found_nothing(outcome.result) else attach(outcome))
            result = run(skip)
            if _found_nothing(result) and not self._finished(result.plan):
                raise _NothingYet
            return result
        return tried

    def _finished(self, plan: str) -> bool:
        progress = self.runtime.reads.progress(PlanSlug(plan))
        return progress.total > 0 and progress.done + progress.dropped == progress.total


class _NothingYet(Exception):
    """A waiting claim-next's try found nothing claimable."""


def _waits(command: Command[Any]) -> TypeGuard[c.ClaimNext]:
    return isinstance(command, c.ClaimNext) and command.wait_seconds > 0


def _found_nothing(result: object) -> bool:
    return isinstance(result, c.NextClaim) and result.grant is None
