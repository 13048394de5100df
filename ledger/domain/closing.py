"""Decisions that end a claim: complete, drop, release, session end, and reopen."""

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.claims import Decision, live_holder
from planledger.ledger.domain.evidence import Evidence
from planledger.ledger.domain.ids import Actor, SessionId, acting_session
from planledger.ledger.domain.plans import MAX_BODY, check_text
from planledger.ledger.domain.state import (
    SATISFYING,
    Note,
    SessionState,
    StepDef,
    StepState,
)

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
    if step.status == "in_review":
        return Decision([], errors.InReview(step.id, definition.title))
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
    holder: SessionId | None, now: datetime, evidence: Evidence | None = None,
    require_checks_pass: bool = False, review: bool = False,
) -> Decision:
    """Done, by the live holder, with the `evidence` it reports (checked already:
    ledger.domain.evidence.check_evidence). A plan that requires every check to pass
    refuses a completion that reports a failed one, naming it. With `review`
    (ledger.domain.review.needs_review) the step is submitted: in review, not done."""
    refused = _check_holder(step, definition, "complete", session, fence, holder, now)
    if refused:
        return refused
    failed = evidence.first_failed() if evidence is not None else None
    if require_checks_pass and failed is not None:
        return Decision([], errors.CheckFailed(step.id, step.plan, failed.name))
    record = evidence.as_record() if evidence is not None else None
    if review:
        return Decision([ev.StepSubmitted(step.id, step.version + 1, timestamp=now,
                                          session_id=session.id, actor=session.id,
                                          fence=step.fence, evidence=record)])
    done = ev.StepCompleted(step.id, step.version + 1, timestamp=now, session_id=session.id,
                            actor=session.id, fence=step.fence, evidence=record)
    return Decision([done])


def decide_release(
    step: StepState, definition: StepDef, session: SessionState, fence: int | None,
    holder: SessionId | None, now: datetime, reason: ev.HolderRelease = "released",
) -> Decision:
    refused = _check_holder(step, definition, "release", session, fence, holder, now)
    if refused:
        return refused
    released = ev.StepReleased(
        step.id, step.version + 1, timestamp=now, session_id=session.id, actor=session.id,
        fence=step.fence, holder=session.id, reason=reason,
    )
    return Decision([released])


def decide_drop(
    step: StepState, definition: StepDef, actor: Actor, session: SessionState | None,
    fence: int | None, holder: SessionId | None, now: datetime,
) -> Decision:
    """Drop: by the live holder, or by any author when nobody holds the step. `session` is
    the actor's session (None for the admin or the local operator). Not a step in review:
    dropped, it would stop blocking its dependents with nobody's second look (a reviewer
    rejects it first)."""
    if step.status == "in_review":
        return Decision([], errors.InReview(step.id, definition.title))
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
    the stream version it lands at (after a close appended in the same decision). A note
    of its own (no `after`) is refused once MAX_WAITING_NOTES wait for the next claimer;
    the note a holder leaves as it lets go is always taken."""
    check_text("note", text, MAX_BODY, required=True)
    if after is None and len(step.notes) >= MAX_WAITING_NOTES:
        raise errors.InvalidInput("note", f"step {step.id} has {len(step.notes)} notes "
                                  "waiting for its next claimer, the limit: add to what "
                                  "they say once the step is claimed")
    return ev.StepNoted(step.id, version or step.version + 1, timestamp=now,
                        session_id=acting_session(actor), actor=actor, text=text,
                        after=after)


# --- notes handed to a claimer ----------------------------------------------------------
# A new claim is handed the notes left since the last one. So that no step can make a
# claim's answer of any size (figure: bench/findings.md), notes wait
# at most MAX_WAITING_NOTES at a time, and an answer carries the newest of them within
# HANDED_NOTES and HANDED_CHARACTERS (the newest always), counting the rest: the log and
# the plan's timeline hold every note.
MAX_WAITING_NOTES = 100
HANDED_NOTES = 10
HANDED_CHARACTERS = 2 * MAX_BODY


def handed_notes(waiting: Sequence[Note]) -> tuple[tuple[Note, ...], int]:
    """The notes a claim's answer carries, oldest first, and how many older ones it
    leaves out."""
    kept: list[Note] = []
    size = 0
    for note in reversed(waiting):
        if kept and (len(kept) == HANDED_NOTES or size + len(note.text) > HANDED_CHARACTERS):
            break
        kept.append(note)
        size += len(note.text)
    return tuple(reversed(kept)), len(waiting) - len(kept)


def with_note(decision: Decision, step: StepState, actor: Actor, note: str | None,
              after: str, now: datetime) -> Decision:
    """The closing decision with its handoff note after it (none on a refusal)."""
    if not note or decision.refusal is not None or not decision.events:
        return decision
    noted = decide_note(step, actor, note, now, after, step.version + 2)
    return Decision([*decision.events, noted])


def decide_arrival(step_id: str, done: bool, note: str | None, actor: Actor,
                   now: datetime) -> list[ev.LedgerEvent]:
    """What follows a new step's StepOpened in the write that adds it: done already
    (`done`: finished work brought over, closed with no claim), then a handoff note left
    on it (`after` "add"), for its first claimer."""
    if not isinstance(done, bool):
        raise errors.InvalidInput("done", "is true or false")
    found: list[ev.LedgerEvent] = []
    if done:
        found.append(ev.StepCompleted(step_id, 2, timestamp=now,
                                      session_id=acting_session(actor), actor=actor, fence=0,
                                      reason="created"))
    if note is not None:
        found.append(ev.StepNoted(step_id, 2 + len(found), timestamp=now,
                                  session_id=acting_session(actor), actor=actor,
                                  text=check_text("note", note, MAX_BODY, required=True),
                                  after="add"))
    return found


def decide_reopen(step: StepState, actor: Actor, now: datetime) -> Decision:
    if step.status not in SATISFYING:
        return Decision([], errors.NotReopenable(step.id, step.status))
    reopened = ev.StepReopened(step.id, step.version + 1, timestamp=now,
                               session_id=acting_session(actor), actor=actor)
    return Decision([reopened])
