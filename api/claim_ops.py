"""The claim's life as operations: claim, heartbeat, claim-next, complete, release, drop,
reopen and force-release; each counted in the metrics and idempotent given a key."""

from collections.abc import Callable
from typing import Any

from planledger.api import views
from planledger.api.idempotency import Write
from planledger.api.operations import Key, Operations
from planledger.api.schemas import ClaimNextOut, ClaimOut, ForceReleaseOut, StepChangeOut
from planledger.ledger.application import Grant
from planledger.ledger.domain.ids import StepId


class ClaimOperations(Operations):
    def _lease(self, lease_seconds: int | None) -> int:
        return self.settings.lease_default if lease_seconds is None else lease_seconds

    def _granted(self, grant: Grant) -> Grant:
        self.metrics.granted(grant, grant.took_over_from)
        return grant

    def _claim_write(self, command: Callable[[], Grant]) -> Write[Grant, ClaimOut]:
        return Write(self._counted(lambda: self._granted(command())),
                     views.claim_out, ClaimOut,
                     lambda d: views.grant_of(self.runtime, d.events[0]))

    def claim(self, step_id: str, actor: str, lease_seconds: int | None = None,
              key: Key = None) -> ClaimOut:
        lease = self._lease(lease_seconds)
        write = self._claim_write(lambda: self.ledger.claim(step_id, actor, lease))
        return self._run("claim", {"step": step_id, "lease": lease}, write, key, actor)

    def heartbeat(self, step_id: str, actor: str, lease_seconds: int | None = None,
                  key: Key = None) -> ClaimOut:
        lease = self._lease(lease_seconds)
        write = self._claim_write(lambda: self.ledger.heartbeat(step_id, actor, lease))
        return self._run("heartbeat", {"step": step_id, "lease": lease}, write, key, actor)

    def claim_next(self, slug: str, actor: str, lease_seconds: int | None = None,
                   key: Key = None) -> ClaimNextOut:
        """Claim the plan's first ready step, skipping any lost to a race; or say why
        nothing is ready (all held, all blocked, all done)."""
        lease = self._lease(lease_seconds)

        def command() -> Grant | None:
            grant = self.ledger.claim_next(slug, actor, lease)
            return self._granted(grant) if grant else None

        def render(grant: Grant | None) -> ClaimNextOut:
            if grant is None:
                reason, message = views.nothing_ready(self.runtime, slug)
                return ClaimNextOut(claimed=None, reason=reason, message=message)
            claimed = views.claim_out(grant)
            return ClaimNextOut(claimed=claimed, reason=None,
                                message=f'claimed step {claimed.step_id} "{claimed.title}"')

        write = Write(self._counted(command), render, ClaimNextOut,
                      lambda d: views.grant_of(self.runtime, d.events[0]), refusals_answer=False)
        return self._run("claim_next", {"plan": slug, "lease": lease}, write, key, actor)

    def _close(self, operation: str, close: Callable[[], None], step_id: str,
               status: Any, key: Key, scope: str | None, fence: int | None) -> StepChangeOut:
        def command() -> StepId:
            close()
            return StepId(step_id)

        write = Write(self._counted(command),
                      lambda s: StepChangeOut(step_id=s, status=status), StepChangeOut,
                      lambda d: StepId(step_id))
        return self._run(operation, {"step": step_id, "fence": fence}, write, key, scope)

    def complete(self, step_id: str, actor: str, fence: int | None = None,
                 key: Key = None) -> StepChangeOut:
        def close() -> None:
            self.ledger.complete(step_id, actor, fence)
            self.metrics.completions.inc()
        return self._close("complete", close, step_id, "done", key, actor, fence)

    def release(self, step_id: str, actor: str, fence: int | None = None,
                key: Key = None) -> StepChangeOut:
        def close() -> None:
            self.ledger.release(step_id, actor, fence)
            self.metrics.released("released")
        return self._close("release", close, step_id, "open", key, actor, fence)

    def drop(self, step_id: str, actor: str, fence: int | None = None,
             key: Key = None) -> StepChangeOut:
        def close() -> None:
            self.ledger.drop(step_id, actor, fence)
            self.metrics.drops.inc()
        return self._close("drop", close, step_id, "dropped", key, actor, fence)

    def reopen(self, step_id: str, actor: str, key: Key = None) -> StepChangeOut:
        return self._close("reopen", lambda: self.ledger.reopen(step_id, actor), step_id,
                           "open", key, actor, None)

    def force_release(self, step_id: str, actor: str, key: Key = None) -> ForceReleaseOut:
        """An operator's release of whatever claim the step carries (the admin, or the
        local operator on the embedded store)."""
        def command() -> bool:
            released = self.ledger.force_release(step_id, actor)
            self.metrics.released("forced", int(released))
            return released

        write = Write(command, lambda r: ForceReleaseOut(step_id=step_id, released=r),
                      ForceReleaseOut, lambda d: bool(d.events))
        return self._run("force_release", {"step": step_id}, write, key, actor)
