"""A timeline's parts: one entry per event a person would want to read, with its one-line
text, the lanes they sit in, and the timeline that holds them.

Refusals reuse the ledger's own error messages, so a bounce reads exactly as the agent
was told: `task already claimed: held by "<session>"`. Other texts name a step by its
number in its plan (`step 5`); entries carry the title beside the text.
"""

import sys
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime
from typing import Any, Literal

from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.evidence import Evidence, check_evidence
from planledger.ledger.domain.state import StepState
from planledger.projections.results import Progress

EntryKind = Literal[
    "plan_created", "step_added", "step_revised", "dependencies_declared",
    "session_started", "ready_listed", "claimed", "renewed", "bounced", "refused",
    "stale_fence", "released", "completed", "dropped", "reopened", "session_ended", "noted",
    "paths_declared", "reserved", "paths_bounced", "submitted", "review_claimed", "reviewed",
    "review_refused",
    "commit",  # a git commit of the session (replays.timeline_commits), not an event
]


# Builds an entry of the event being described; names a step (`step 5`).
EntryFn = Callable[..., "Entry"]
RefFn = Callable[[str], str]


@dataclass(frozen=True)
class StepInfo:
    """What an entry says of its step: plan, number, title."""

    plan: str
    number: int  # 1-based place in its plan
    title: str
    step_id: str  # shared by every entry about the step (see _shared)


@dataclass(frozen=True, slots=True)
class Entry:
    """One thing that happened, in the lane of `session_id`. `holder` is, for a bounce, the
    session bounced off; for a release, the session whose claim ended; for a stale fence,
    the current holder; for a claim after a lapse, the lapsed holder."""

    position: int
    at: datetime
    session_id: str | None
    kind: EntryKind
    text: str
    plan: str | None = None
    step_id: str | None = None
    step_number: int | None = None
    step_title: str | None = None
    holder: str | None = None
    fence: int | None = None
    step_ids: tuple[str, ...] = ()
    # A completion's evidence, as its event keeps it (ledger.domain.evidence): commits,
    # branch, pr, checks.
    evidence: dict[str, Any] | None = None


def _shared(text: str | None) -> str | None:
    """One string object per id, however many entries name it (each decoded event brings
    its own copy: a long log's entries held a copy of their ids each)."""
    return None if text is None else sys.intern(text)


def describe(
    position: int, event: ev.LedgerEvent, info: Callable[[str], StepInfo | None],
    before: StepState | None,
) -> Entry | None:
    """The entry for `event` (None for bookkeeping such as StepOpened); `info` knows the
    steps as of this event, `before` is the step's state before a step event."""
    known: dict[str, StepInfo | None] = {}  # an entry names its step twice: one look-up

    def about(step_id: str) -> StepInfo | None:
        if step_id not in known:
            known[step_id] = info(step_id)
        return known[step_id]

    def entry(kind: EntryKind, text: str, step_id: str | None = None, **extra: Any) -> Entry:
        step = about(step_id) if step_id else None
        plan = extra.pop("plan", None)
        if step is None:
            return Entry(position, event.timestamp, _shared(event.session_id), kind, text,
                         plan=plan, step_id=_shared(step_id), **extra)
        return Entry(position, event.timestamp, _shared(event.session_id), kind, text,
                     plan=step.plan, step_id=step.step_id, step_number=step.number,
                     step_title=step.title, **extra)

    def ref(step_id: str) -> str:
        step = about(step_id)
        return f"step {step.number}" if step else f"step {step_id}"

    if isinstance(event, _PATH_EVENTS):
        return _paths_entry(event, entry, ref, about)
    if isinstance(event, _PLAN_EVENTS):
        return _plan_entry(event, entry, ref)
    if isinstance(event, _SESSION_EVENTS):
        return _session_entry(event, entry, ref, about)
    return _step_entry(event, before, entry, ref)


# Built once: a union written inside `describe` was built again for every event.
_PLAN_EVENTS = ev.PlanCreated | ev.StepAdded | ev.StepRevised | ev.DependenciesDeclared
_SESSION_EVENTS = (ev.SessionStarted | ev.SessionEnded | ev.ReadyListed | ev.ClaimBounced
                   | ev.ClaimRefused | ev.StaleFenceRejected | ev.ReviewRefused)


_PATH_EVENTS = ev.PathsDeclared | ev.PathsReserved | ev.PathsBounced


def _paths_entry(
    event: ev.LedgerEvent, entry: EntryFn, ref: RefFn, info: Callable[[str], StepInfo | None]
) -> Entry | None:
    """A step's paths declared, a claim's reserved, a claim bounced off another's."""
    if isinstance(event, ev.PathsDeclared):
        return entry("paths_declared", f"{ref(event.step_id)} touches "
                     f"{_patterns(event.paths)}", event.step_id)
    if isinstance(event, ev.PathsReserved):
        return entry("reserved", f"reserved {_patterns(event.paths)} for {ref(event.step_id)} "
                     f"(fence {event.fence})", event.step_id, fence=event.fence)
    if isinstance(event, ev.PathsBounced):
        first = event.conflicts[0]
        theirs = [str(c["step_id"]) for c in event.conflicts]
        bounce = errors.PathsHeld(event.step_id, [
            (str(c["holder"]), None, str(c["step_id"]), _title(info, str(c["step_id"])),
             _strings(c["patterns"])) for c in event.conflicts],
            refs={s: r for s in theirs if (r := _reference(info(s))) is not None})
        return entry("paths_bounced", f"claim of {ref(event.step_id)} bounced: {bounce}",
                     event.step_id, holder=str(first["holder"]))
    return None


def _patterns(paths: list[dict[str, str]]) -> str:
    shown = [p["pattern"] + (" (shared)" if p.get("mode") == "shared" else "") for p in paths]
    return ", ".join(shown) or "no paths"


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _reference(step: StepInfo | None) -> str | None:
    """The step's reference, `plan#N` (ledger.domain.references), as messages name it."""
    return None if step is None else f"{step.plan}#{step.number}"


def _title(info: Callable[[str], StepInfo | None], step_id: str) -> str:
    step = info(step_id)
    return step.title if step else ""


def _plan_entry(event: ev.LedgerEvent, entry: EntryFn, ref: RefFn) -> Entry | None:
    plan = event.originator_id.removeprefix("plan:")
    if isinstance(event, ev.PlanCreated):
        count = len(event.constraints)
        return entry("plan_created", f'created plan {plan} "{event.title}" '
                     f"({count} constraint{'s' * (count != 1)})", plan=plan)
    if isinstance(event, ev.StepAdded):
        after = f" (waits on {', '.join(ref(d) for d in event.depends_on)})" \
            if event.depends_on else ""
        return entry("step_added", f'added {ref(event.step_id)} "{event.title}"{after}'
                     f"{_relations(event, ref)}", event.step_id)
    if isinstance(event, ev.StepRevised):
        return entry("step_revised", f"revised {ref(event.step_id)}", event.step_id)
    if isinstance(event, ev.DependenciesDeclared):
        waits = ", ".join(ref(d) for d in event.depends_on) or "nothing new"
        return entry("dependencies_declared", f"{ref(event.step_id)} now waits on "
                     f"{waits}", event.step_id)
    return None


def _relations(event: ev.StepAdded, ref: RefFn) -> str:
    """What a new step's relations add to its entry (ledger.domain.relations)."""
    said = [f"under {ref(event.parent)}"] if event.parent else []
    if event.discovered_from:
        said.append(f"discovered while working on {ref(event.discovered_from)}")
    if event.labels:
        said.append("labels " + ", ".join(event.labels))
    return "; " + "; ".join(said) if said else ""


def _session_entry(
    event: ev.LedgerEvent, entry: EntryFn, ref: RefFn, info: Callable[[str], StepInfo | None]
) -> Entry | None:
    if isinstance(event, ev.SessionStarted):
        named = f' as "{event.name}"' if event.name else ""
        where = f" in {event.cwd}" if event.cwd else ""
        said = ", ".join(x for x in (event.source, event.model) if x)
        return entry("session_started", f"session {event.originator_id} started{named}"
                     f"{where}{f' ({said})' if said else ''}")
    if isinstance(event, ev.SessionEnded):
        released = f", releasing {len(event.released)} claim(s)" if event.released else ""
        found = f": {_first_line(event.findings)}" if event.findings else ""
        return entry("session_ended", f"session ended{released}{found}")
    if isinstance(event, ev.ReadyListed):
        listed = ", ".join(ref(s) for s in event.step_ids) or "none"
        count = len(event.step_ids)
        return entry("ready_listed", f"tasks_ready: {count} step{'s' * (count != 1)} ready "
                     f"({listed})", plan=event.plan, step_ids=tuple(event.step_ids))
    if isinstance(event, ev.ClaimBounced):
        step = info(event.step_id)
        title = step.title if step else ""
        bounce = errors.AlreadyClaimed(event.step_id, title, event.holder, event.holder_fence,
                                       ref=_reference(step))
        return entry("bounced", f"claim bounced: {bounce}", event.step_id,
                     holder=event.holder, fence=event.holder_fence)
    if isinstance(event, ev.ClaimRefused):
        # The event keeps the message by id; people read the step by its reference.
        reference = _reference(info(event.step_id))
        detail = event.detail.replace(event.step_id, reference) if reference else event.detail
        return entry("refused", f"claim refused: {detail}", event.step_id)
    if isinstance(event, ev.ReviewRefused):
        return entry("review_refused", f"review refused: {event.detail}", event.step_id)
    if isinstance(event, ev.StaleFenceRejected):
        stale = errors.StaleFence(event.step_id, event.fence, event.current_fence, event.holder)
        return entry("stale_fence", f"{event.action} refused: {stale}", event.step_id,
                     holder=event.holder, fence=event.fence)
    return None


def _step_entry(
    event: ev.LedgerEvent, before: StepState | None, entry: EntryFn, ref: RefFn
) -> Entry | None:
    step = event.originator_id
    if isinstance(event, ev.StepClaimed):
        lapsed = before.holder if before and before.status == "in_progress" else None
        after = f'; the claim of "{lapsed}" had lapsed' if lapsed else ""
        return entry("claimed", f"claimed {ref(step)} (fence {event.fence}, lease "
                     f"{event.lease_seconds} s{after})", step, holder=lapsed, fence=event.fence)
    if isinstance(event, ev.LeaseRenewed):
        return entry("renewed", f"heartbeat on {ref(step)}: lease until "
                     f"{_clock(event.expires_at)}", step, fence=event.fence)
    if isinstance(event, ev.StepReleased):
        why = {"released": "released", "session_ended": "released (session ended)",
               "caller_departed": "released (its caller left before it was told of the "
                                  "claim)",
               "forced": f'force-released (held by "{event.holder}")'}[event.reason]
        return entry("released", f"{ref(step)} {why}", step, holder=event.holder,
                     fence=event.fence)
    if isinstance(event, ev.StepCompleted):
        return _completed(event, entry, ref)
    if isinstance(event, ev.StepSubmitted):
        shown = f": {_evidence(event.evidence)}" if event.evidence is not None else ""
        return entry("submitted", f"completed {ref(step)}, for review{shown}", step,
                     fence=event.fence, evidence=event.evidence)
    if isinstance(event, ev.ReviewClaimed):
        return entry("review_claimed", f"took {ref(step)} to review (fence {event.fence}, "
                     f"lease {event.lease_seconds} s)", step, fence=event.fence)
    if isinstance(event, ev.StepReviewed):
        said = ("approved: it is done" if event.verdict == "approve"
                else "rejected: it is open again")
        return entry("reviewed", f'reviewed {ref(step)}, the work of "{event.author}", '
                     f"{said}", step, holder=event.author, fence=event.fence)
    if isinstance(event, ev.StepDropped):
        return entry("dropped", f"dropped {ref(step)}", step, fence=event.fence)
    if isinstance(event, ev.StepReopened):
        return entry("reopened", f"reopened {ref(step)}", step)
    if isinstance(event, ev.StepNoted):
        return entry("noted", f"note on {ref(step)}: {_first_line(event.text)}", step)
    return None


def _completed(event: ev.StepCompleted, entry: EntryFn, ref: RefFn) -> Entry:
    step = event.originator_id
    if event.reason is not None:  # closed with no claim (ledger.domain.relations)
        said = ("closed: its last child finished" if event.reason == "last_child"
                else "arrived done")
        return entry("completed", f"{ref(step)} {said}", step, fence=event.fence)
    if event.evidence is None:
        return entry("completed", f"completed {ref(step)}", step, fence=event.fence)
    return entry("completed", f"completed {ref(step)}: {_evidence(event.evidence)}", step,
                 fence=event.fence, evidence=event.evidence)


def _evidence(record: dict[str, object]) -> str:
    """A completion's evidence in one line; a record no ledger wrote (a recording's file
    edited by hand) is said to be unreadable rather than shown."""
    try:
        kept = check_evidence(Evidence.of_record(record))
    except errors.InvalidInput:
        return "evidence that does not read as evidence"
    return kept.described() if kept is not None else "no evidence"


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _clock(at: datetime) -> str:
    """HH:MM:SS, as `f"{at:%H:%M:%S}"` writes it in a seventh of the time (no strftime)."""
    return at.time().isoformat("seconds")


@dataclass(frozen=True)
class Lane:
    """One session's column (`session_id` None: set-up done without a session)."""

    session_id: str | None
    name: str | None
    label: str


@dataclass(frozen=True)
class Timeline:
    """Lanes in order of first appearance, entries in log order, and each plan's progress
    as of the last event the model applied. A page (`after`, `limit`) says whether more
    entries follow (`more`) and where the next page starts (`next_after`)."""

    lanes: tuple[Lane, ...]
    entries: tuple[Entry, ...]
    progress: tuple[Progress, ...]
    more: bool = False
    next_after: int = 0

    def lane(self, session_id: str | None) -> Lane:
        return next(lane for lane in self.lanes if lane.session_id == session_id)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: datetimes as ISO 8601 strings, tuples as lists."""
        result: dict[str, Any] = _plain(self)
        return result


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value
