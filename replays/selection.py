"""Choosing part of a log: by plan, sessions and time window, plus what it depends on.

The events asked for are `matched`. To be read (folded) and re-executed on its own, a
part also needs, up to its last event, every event of each stream it touches: the plans
of the steps it names with all their steps, the sessions that acted or held, and the
rest of each command it touches. Those are added until nothing more is needed; the
recording marks them `context`, and its timeline shows the matched events only.
"""

from eventsourcing.persistence import Notification

from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PLAN_STREAM_PREFIX
from planledger.replays.format import Selection

Decoded = list[tuple[Notification, object]]


def choose(log: Decoded, selection: Selection, of: dict[int, int]) -> tuple[set[int], set[int]]:
    """(matched, kept) positions: what the selection asks for, and that with its context."""
    matched = _matches(log, selection)
    if selection.everything or not matched:
        return matched, set(matched)
    commands = {of[p] for p in matched if p in of}
    end = max([*matched, *(p for p, c in of.items() if c in commands)])
    before = [(n, e) for n, e in log if n.id <= end]
    steps_of: dict[str, set[str]] = {}
    for _, e in before:
        if isinstance(e, ev.StepAdded):
            steps_of.setdefault(e.originator_id, set()).add(e.step_id)
    plan_of = {step: plan for plan, steps in steps_of.items() for step in steps}
    kept = set(matched)
    while True:
        streams: set[str] = set()
        for note, event in before:
            if note.id in kept:
                streams |= _needs(str(note.originator_id), event, plan_of, steps_of)
        commands = {of[p] for p in kept if p in of}
        more = {n.id for n, _ in before if str(n.originator_id) in streams
                or of.get(n.id) in commands}
        if more <= kept:
            return matched, kept
        kept |= more


def _needs(stream: str, event: object, plan_of: dict[str, str],
           steps_of: dict[str, set[str]]) -> set[str]:
    """The streams an event depends on: its own, its session's, the holder's, and its
    step's whole plan."""
    needed = {stream}
    for name in ("session_id", "holder"):
        session = getattr(event, name, None)
        if isinstance(session, str):
            needed.add(session)
    plan = stream if stream.startswith(PLAN_STREAM_PREFIX) else None
    for step in (stream, getattr(event, "step_id", None)):
        if isinstance(step, str) and step in plan_of:
            plan = plan_of[step]
    if isinstance(event, ev.ReadyListed | ev.StepOpened):
        plan = f"{PLAN_STREAM_PREFIX}{event.plan}"
    if plan is not None:
        needed |= {plan, *steps_of.get(plan, ())}
    return needed


def _matches(log: Decoded, selection: Selection) -> set[int]:
    """Positions of the events the selection asks for."""
    plan = f"{PLAN_STREAM_PREFIX}{selection.plan}" if selection.plan else None
    steps = {e.step_id for _, e in log if isinstance(e, ev.StepAdded)
             and e.originator_id == plan}
    matched = set()
    for note, event in log:
        if not isinstance(event, ev.LedgerEvent):
            if selection.everything:  # other layers' events go with the whole log only
                matched.add(note.id)
            continue
        if selection.sessions and not {event.session_id, event.originator_id} & set(
                selection.sessions):
            continue
        if selection.since and event.timestamp < selection.since:
            continue
        if selection.until and event.timestamp > selection.until:
            continue
        if plan is None or _about(event, plan, steps):
            matched.add(note.id)
    if plan is not None:  # the start and end of every session that acted on the plan
        actors = {e.session_id for n, e in log if n.id in matched
                  and isinstance(e, ev.LedgerEvent)}
        matched |= {n.id for n, e in log if isinstance(e, ev.SessionStarted | ev.SessionEnded)
                    and e.originator_id in actors}
    return matched


def _about(event: ev.LedgerEvent, plan: str, steps: set[str]) -> bool:
    if event.originator_id == plan or event.originator_id in steps:
        return True
    if isinstance(event, ev.ReadyListed):
        return f"{PLAN_STREAM_PREFIX}{event.plan}" == plan
    return getattr(event, "step_id", None) in steps
