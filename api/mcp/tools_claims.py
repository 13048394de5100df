"""Claiming and closing steps: tasks_claim (and heartbeat), tasks_claim_next,
tasks_complete, tasks_release, tasks_drop, and a reviewer's tasks_review."""

from collections.abc import Callable
from typing import Annotated, Any, Literal

from anyio import to_thread
from mcp.server.mcpserver import Context
from pydantic import Field

from planledger.api import reads
from planledger.api.mcp.argument_types import (
    Fence,
    Lease,
    NoteArg,
    NoteText,
    Plan,
    SessionArg,
    StepId,
    TokenArg,
    Wait,
)
from planledger.api.mcp.schemas import ClaimedNextOut, ClaimedOut, StepClosedOut
from planledger.api.mcp.toolbase import Tools
from planledger.api.mcp.tools_paths import ClaimPaths
from planledger.api.schemas import (
    ClaimNextOut,
    ClaimOut,
    EvidenceIn,
    NoteAddedOut,
    StepChangeOut,
    evidence_of,
    path_specs,
)
from planledger.api.text import TEXT_FIRST
from planledger.ledger import commands as c

EvidenceArg = Annotated[EvidenceIn | None, Field(
    description="What shows the work done, kept in the completion's event: `commits` (shas "
    "of 7 to 64 hex digits), `branch`, `pr` (an http(s) URL) and `checks` (each {name, "
    "result: pass|fail, command, summary}).")]


ReviewFlag = Annotated[bool, Field(
    description="True: take a step in review to review, not to work on it (not your own "
    "work, nor your key's); then call tasks_review with your verdict.")]
ClaimNextFlag = Annotated[bool, Field(
    description="True: once done, claim the plan's next step for you too (answered in "
    "`next`), exactly as tasks_claim_next would.")]
Verdict = Annotated[Literal["approve", "reject"], TEXT_FIRST, Field(
    description="approve: the step is done and its dependents unblock; reject: it opens "
    "again, and your note is handed to its next claimer.")]
ReviewNote = Annotated[str | None, Field(
    description="What you found (on a reject: what to fix), handed to the step's next "
    "claimer.")]


class ClaimTools(Tools):
    def tools(self) -> list[Callable[..., Any]]:
        return [self.tasks_claim, self.tasks_claim_next, self.tasks_complete,
                self.tasks_release, self.tasks_drop, self.tasks_note, self.tasks_review]

    def tasks_claim(self, ctx: Context[Any, Any], step_id: StepId, lease_seconds: Lease = None,
                    paths: ClaimPaths = None, review: ReviewFlag = False,
                    session_id: SessionArg = None, token: TokenArg = None) -> ClaimedOut:
        """Claim a step before working on it: it moves to in_progress, held by your
        session, with a lease (`expires_at`) and a `fence`. Of any claims made at the same
        moment exactly one lands. Claiming a step you already hold is your heartbeat: it
        extends the lease and keeps the fence, so re-claim well before `expires_at` while
        you work (a lapsed lease lets another agent take the step over).
        Errors: `task already claimed: held by "<session>"` means another agent got there
        first: do not work on that step; call tasks_ready again and claim from the fresh
        list. `task blocked` names the steps it waits on; `task closed` means it is done or
        dropped already. The claim reserves the step's paths and your `paths` (answered as
        `paths`) until it ends; `paths reserved: "<pattern>" held by "<session>" (…, step
        …)` means another agent's claim holds files yours would touch: pick another step
        (tasks_ready lists those that would collide last, with `collides_with`). With
        `review: true`, take a step in review to review it (see tasks_review)."""
        actor = self.actor(ctx, session_id, token)
        claimed = self.service.answer(c.Claim(step_id, actor, lease_seconds,
                                              path_specs(paths), review), ClaimOut)
        return ClaimedOut(**dict(claimed), progress=self._progress(claimed.plan))

    async def tasks_claim_next(self, ctx: Context[Any, Any], plan: Plan,
                               lease_seconds: Lease = None, wait_seconds: Wait = 0,
                               review: ReviewFlag = False,
                               session_id: SessionArg = None, token: TokenArg = None,
                               ) -> ClaimedNextOut:
        """Pick and claim the plan's next ready step in one atomic call (by priority, then
        the step the longest chain of unfinished steps waits on, then the oldest),
        skipping any step another agent wins meanwhile, so you never get a bounce. Answers
        the claim (as tasks_claim does), or `claimed: null` with `reason` saying why
        nothing is ready: all_held (others hold every open step: wait or ask), all_blocked
        (everything open waits on unfinished steps), all_done (the plan is finished),
        empty, or none_ready (a mix). With `wait_seconds`, instead of answering nothing at
        once it waits for a step to become claimable and claims it (answering why not if
        the time runs out): call it again after each step instead of polling tasks_ready.
        With `review: true` it hands you a step in review to review (status in_review,
        held by you under a lease), never your own work."""
        actor = self.actor(ctx, session_id, token)
        command = c.ClaimNext(plan, actor, lease_seconds, wait_seconds, review)
        found = await self.service.answer_async(command, ClaimNextOut)
        progress = await to_thread.run_sync(self._progress, plan)
        return ClaimedNextOut(**dict(found), progress=progress)

    def tasks_complete(self, ctx: Context[Any, Any], step_id: StepId, fence: Fence = None,
                       note: NoteArg = None, evidence: EvidenceArg = None,
                       claim_next: ClaimNextFlag = False, lease_seconds: Lease = None,
                       session_id: SessionArg = None, token: TokenArg = None) -> StepClosedOut:
        """Mark a step you hold done once its work is finished; this releases it and
        unblocks the steps that wait on it. Answers the plan's progress line. Give
        `evidence` of the work: the commits (shas) and their branch, the change request
        (`pr`, a URL) and the checks you ran, each pass or fail; it stays in the step's
        history for whoever audits it. Refused with `not the holder` if your claim lapsed
        or you never held it (claim it again first), `stale fence` if someone else claimed
        it since your grant, or `check "<name>" failed` where the plan requires every check
        to pass (fix it, or report it and leave the step to others). Where the plan or
        the step requires a review, the step goes to in_review instead of done: another
        key's session approves it (then it is done) or rejects it (open again). The answer
        lists the steps it `unblocked`; with `claim_next: true` it also claims the plan's
        next step for you (`next`, as tasks_claim_next answers), saving a round trip."""
        actor = self.actor(ctx, session_id, token)
        return self._closed(c.Complete(step_id, actor, fence, note, evidence_of(evidence),
                                       claim_next, lease_seconds))

    def tasks_release(self, ctx: Context[Any, Any], step_id: StepId, fence: Fence = None,
                      note: NoteArg = None,
                      session_id: SessionArg = None, token: TokenArg = None) -> StepClosedOut:
        """Give back a step you hold without finishing it (you are stopping, or it is not
        yours to do); it is claimable by anyone at once. Holder only."""
        actor = self.actor(ctx, session_id, token)
        return self._closed(c.Release(step_id, actor, fence, note))

    def tasks_drop(self, ctx: Context[Any, Any], step_id: StepId, fence: Fence = None,
                   note: NoteArg = None,
                   session_id: SessionArg = None, token: TokenArg = None) -> StepClosedOut:
        """Drop a step that should not be done at all; it stops blocking the steps that
        wait on it. Allowed to its live holder, or to any session while nobody holds it."""
        actor = self.author(ctx, session_id, token)
        return self._closed(c.Drop(step_id, actor, fence, note))

    def tasks_note(self, ctx: Context[Any, Any], step_id: StepId, text: NoteText,
                   session_id: SessionArg = None, token: TokenArg = None) -> NoteAddedOut:
        """Leave a handoff note on a step for whoever picks it up next: what you tried,
        what blocked you, where you stopped. The step's next claimer reads the notes left
        since its last claim in the claim's answer (`notes`); they also show in the step's
        history (tasks_list with step_id) and the plan's timeline. Any session may note any
        step; tasks_release, tasks_drop and tasks_complete take a `note` too."""
        actor = self.author(ctx, session_id, token)
        return self.service.answer(c.AddNote(step_id, actor, text), NoteAddedOut)

    def tasks_review(self, ctx: Context[Any, Any], step_id: StepId, verdict: Verdict,
                     note: ReviewNote = None,
                     session_id: SessionArg = None, token: TokenArg = None) -> StepClosedOut:
        """Review a step in review (four eyes): approve makes it done and unblocks the
        steps waiting on it; reject opens it again and hands your note to its next
        claimer. Take one first with tasks_claim_next(plan, review=true) so no other
        reviewer reviews it at the same time. Refused naming the rule if you finished the
        work yourself or your session was started with the same key as its author's, and
        `not in review` (naming its status) for a step that is not waiting for one."""
        actor = self.actor(ctx, session_id, token)
        return self._closed(c.Review(step_id, actor, verdict, note))

    def _closed(self, command: c.Complete | c.Release | c.Drop | c.Review) -> StepClosedOut:
        change = self.service.answer(command, StepChangeOut)
        return StepClosedOut(**dict(change), progress=self._progress(change.plan))

    def _progress(self, plan: str) -> str:
        return reads.plan_progress(self.runtime, plan).line
