"""Decisions that end a claim: complete, drop, release, session end, and reopen."""

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.claims import Decision, live_holder
from planledger.ledger.domain.ids import Actor, SessionId, acting_session
from planledger.ledger.domain.plans import MAX_BODY, check_text
from planledger.ledger.domain.state import SATISFYING, SessionState, StepDef, StepState

Action = Literal["complete", "drop", "release"]


def _check_holder(
    step: StepState,
    definition: StepDef,
    action: Action,
    session: SessionState,
    fence: int | None,
    holder: SessionId | None,
    now: datetime,
) -> Decision | None:
    """Refuse unless `session` is the live holder and `fence` (if given) is current."""
    if step.status in SATISFYING:
        return Decision([], errors.Closed(step.id, definition.title, step.status))
    if fence is not None and fence != step.fence:
        rejected = ev.StaleFenceRejected(
            session.id, session.version + 1, timestamp=now, session_id=session.id,
            actor=session.id, step_id=step.id, action=action, fence=fence, current_fence=step.fence,
            holder=holder,
        )
        return Decision([rejected], errors.StaleFence(step.id, fence, step.fence, holder))
    if holder != session.id:
        return Decision([], errors.NotHolder(step.id, session.id, holder))
    return None


def decide_complete(
    step: StepState, definition: StepDef, session: SessionState, fence: int | None,
    holder: SessionId | None, now: datetime,
) -> Decision:
    refused = _check_holder(step, definition, "complete", session, fence, holder, now)
    if refused:
        return refused
    done = ev.StepCompleted(step.id, step.version + 1, timestamp=now, session_id=session.id,
                            actor=session.id, fence=step.fence)
    return Decision([done])


def decide_release(
    step: StepState, definition: StepDef, session: SessionState, fence: int | None,
    holder: SessionId | None, now: datetime,
) -> Decision:
    refused = _check_holder(step, definition, "release", session, fence, holder, now)
    if refused:
        return refused
    released = ev.StepReleased(
        step.id, step.version + 1, timestamp=now, session_id=session.id, actor=session.id,
        fence=step.fence, holder=session.id, reason="released",
    )
    return Decision([released])


def decide_drop(
    step: StepState, definition: StepDef, actor: Actor, session: SessionState | None,
    fence: int | None, holder: SessionId | None, now: datetime,
) -> Decision:
    """Drop: by the live holder, or by any author when nobody holds the step. `session` is
    the actor's session (None for the admin or the local operator)."""
    if holder is None and step.status not in SATISFYING and fence is None:
        dropped = ev.StepDropped(step.id, step.version + 1, timestamp=now,
                                 session_id=session.id if session else None, actor=actor,
                                 fence=None)
        return Decision([dropped])
    if session is None:
        if step.status in SATISFYING:
            return Decision([], errors.Closed(step.id, definition.title, step.status))
        return Decision([], errors.NotHolder(step.id, actor, holder))
    refused = _check_holder(step, definition, "drop", session, fence, holder, now)
    if refused:
        return refused
    dropped = ev.StepDropped(step.id, step.version + 1, timestamp=now, session_id=session.id,
                             actor=session.id, fence=step.fence)
    return Decision([dropped])


def decide_force_release(
    step: StepState, holder: SessionId | None, actor: Actor, now: datetime
) -> Decision:
    """An operator's release of whatever claim the step carries, live or lapsed."""
    if step.status != "in_progress" or step.holder is None:
        return Decision([])
    released = ev.StepReleased(
        step.id, step.version + 1, timestamp=now, session_id=acting_session(actor), actor=actor,
        fence=step.fence, holder=holder or step.holder, reason="forced",
    )
    return Decision([released])


def decide_end_session(
    session: SessionState, held: Sequence[StepState], now: datetime,
    findings: str | None = None,
) -> Decision:
    """End a session; each step it still holds is released as its own event. `findings`:
    what the agent reports as it stops, kept on its timeline."""
    if session.ended:
        return Decision([], errors.SessionClosed(session.id))
    releases = [
        ev.StepReleased(
            step.id, step.version + 1, timestamp=now, session_id=session.id, actor=session.id,
            fence=step.fence, holder=session.id, reason="session_ended",
        )
        for step in held
        if live_holder(step, now, holder_ended=False) == session.id
    ]
    ended = ev.SessionEnded(
        session.id, session.version + 1, timestamp=now, session_id=session.id,
        actor=session.id, released=[r.originator_id for r in releases],
        findings=findings or None,
    )
    return Decision([*releases, ended])


def decide_note(step: StepState, actor: Actor, text: str, now: datetime,
                after: str | None = None, version: int | None = None) -> ev.StepNoted:
    """A handoff note on the step, by any author, whatever the step's status. `version`:
    the stream version it lands at (after a close appended in the same decision)."""
    check_text("note", text, MAX_BODY, required=True)
    return ev.StepNoted(step.id, version or step.version + 1, timestamp=now,
                        session_id=acting_session(actor), actor=actor, text=text,
                        after=after)


def with_note(decision: Decision, step: StepState, actor: Actor, note: str | None,
              after: str, now: datetime) -> Decision:
    """The closing decision with its handoff note after it (none on a refusal)."""
    if not note or decision.refusal is not None or not decision.events:
        return decision
    noted = decide_note(step, actor, note, now, after, step.version + 2)
    return Decision([*decision.events, noted])


def decide_reopen(step: StepState, actor: Actor, now: datetime) -> Decision:
    if step.status not in SATISFYING:
        return Decision([], errors.NotReopenable(step.id, step.status))
    reopened = ev.StepReopened(step.id, step.version + 1, timestamp=now,
                               session_id=acting_session(actor), actor=actor)
    return Decision([reopened])
