"""The review gate (four eyes): work that another key's session must look at before it
counts as done.

A planner marks a plan, or one step, `review: required`. Its holder's completion then
submits the step (`StepSubmitted`: the claim and its reservations end, its dependents stay
blocked) and it waits in review. A reviewer takes it (`ReviewClaimed`: a lease like a
claim's, so two reviewers never review one step at once) and gives a verdict
(`StepReviewed`): "approve" makes it done, "reject" opens it again with the reviewer's note
handed to the next claimer. Neither the completion's author nor another session started
with the author's access key may review it; a refused review is recorded as
`ReviewRefused` on the reviewer's session, as a bounced claim is.
"""

from collections.abc import Callable
from datetime import datetime

from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.claims import Decision, lease_end, renew
from planledger.ledger.domain.ids import SessionId
from planledger.ledger.domain.plans import MAX_BODY, check_text
from planledger.ledger.domain.state import PlanState, SessionState, StepDef, StepState


def needs_review(plan: PlanState, definition: StepDef) -> bool:
    """Whether the step's completion waits for a review: its plan's setting or its own."""
    return plan.review_required or definition.review_required


def check_verdict(verdict: str) -> ev.ReviewVerdict:
    """The verdict named, or InvalidInput listing the verdicts."""
    for known in ev.REVIEW_VERDICTS:
        if verdict == known:
            return known
    raise errors.InvalidInput("verdict", f"{verdict!r} is not a verdict; verdicts are "
                              + ", ".join(ev.REVIEW_VERDICTS))


def own_work(step: StepState, session: SessionState,
              author: SessionState | None) -> errors.OwnWork | None:
    """The four-eyes refusal when `session` is the author or shares the author's key."""
    author_id = step.author or SessionId("")
    if session.id == author_id:
        return errors.OwnWork(step.id, author_id)
    if author is not None and author.key is not None and author.key == session.key:
        return errors.OwnWork(step.id, author_id, same_key=author.key)
    return None


def _refused(step: StepState, session: SessionState, reason: ev.ReviewRefusal,
             refusal: errors.LedgerError, now: datetime) -> Decision:
    refused = ev.ReviewRefused(session.id, session.version + 1, timestamp=now,
                               session_id=session.id, actor=session.id, step_id=step.id,
                               reason=reason, detail=str(refusal))
    return Decision([refused], refusal)


def _may_review(
    step: StepState, definition: StepDef, session: SessionState, author: SessionState | None,
    current: SessionId | None, now: datetime, names: Callable[[SessionId], str | None],
) -> Decision | None:
    """The refusal of a review (or a claim to review) by `session`, or None when it may:
    the step is in review, is not the session's own work, and no other reviewer holds it
    (`current`: the live reviewer)."""
    if step.status != "in_review":
        return _refused(step, session, "not_in_review",
                        errors.NotInReview(step.id, step.status), now)
    own = own_work(step, session, author)
    if own is not None:
        return _refused(step, session, "same_key" if own.same_key else "own_work", own, now)
    if current is not None and current != session.id:
        held = errors.AlreadyClaimed(step.id, definition.title, current, step.fence,
                                     holder_name=names(current))
        return _refused(step, session, "held", held, now)
    return None


def decide_review_claim(
    step: StepState, definition: StepDef, session: SessionState, author: SessionState | None,
    current: SessionId | None, lease_seconds: int, now: datetime,
    names: Callable[[SessionId], str | None] = lambda _: None,
) -> Decision:
    """Take a step in review for reviewing, under a new fence; the reviewer's own repeat
    renews its lease (never shortening it), as a holder's heartbeat does."""
    refused = _may_review(step, definition, session, author, current, now, names)
    if refused is not None:
        return refused
    if current == session.id:
        return Decision([renew(step, session.id, lease_seconds, now)])
    return Decision([ev.ReviewClaimed(
        step.id, step.version + 1, timestamp=now, session_id=session.id, actor=session.id,
        fence=step.fence + 1, lease_seconds=lease_seconds,
        expires_at=lease_end(now, lease_seconds))])


def decide_review(
    step: StepState, definition: StepDef, session: SessionState, author: SessionState | None,
    current: SessionId | None, verdict: str, note: str | None, now: datetime,
    names: Callable[[SessionId], str | None] = lambda _: None,
) -> Decision:
    """Approve (done) or reject (open again) a step in review. A reviewer need not have
    taken the step first, but may not review one another reviewer holds. The note, if
    any, follows the verdict as a handoff note for the step's next claimer."""
    checked = check_verdict(verdict)
    if note:
        check_text("note", note, MAX_BODY, required=True)
    refused = _may_review(step, definition, session, author, current, now, names)
    if refused is not None:
        return refused
    reviewed = ev.StepReviewed(step.id, step.version + 1, timestamp=now,
                               session_id=session.id, actor=session.id, verdict=checked,
                               author=step.author or "", fence=step.fence)
    if not note:
        return Decision([reviewed])
    noted = ev.StepNoted(step.id, step.version + 2, timestamp=now, session_id=session.id,
                         actor=session.id, text=note, after=checked)
    return Decision([reviewed, noted])
