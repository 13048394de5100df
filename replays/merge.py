"""Agents' transcripts and the ledger's log on one clock: the seed's figure, built from
the files the agents wrote and the events the ledger kept.

Binding: a transcript belongs to the ledger sessions its planledger calls name — the
`session_id` its `session_start` answered, else a `session_id` or token it passed, else
the `holder` a claim answered (`claimed_by` before 0.3.0). Joining: each planledger call
is paired, in the transcript's order, with the first event of its session that it could
have caused (a tasks_claim with a claim, heartbeat, bounce or refusal of the same step; a
tasks_complete with a completion or a stale fence; …), and the pair is shown once, at the
ledger's time.
Clocks: the transcript's clock against the ledger's is estimated from the joined pairs
(the median of event time minus the middle of call and answer), the pairs are joined again
within that estimate, and an offset larger than the threshold is a finding and applied.
Disagreements are findings, never failures: an answer that says a claim (or a
completion, a bounce, …) happened with no such event; an answer the event contradicts; an
event of the session no call explains; a transcript bound to no session.

Order: each lane keeps its transcript's order; events the ledger holds are ordered by log
position against each other (the order that decided every race); everything else by time.
"""

import statistics
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from planledger.api import timeline_render as render
from planledger.projections.timeline_entries import Entry, Lane, Timeline
from planledger.replays.transcripts import Item, ToolCall, Transcript, result_json

DEFAULT_CLOCK_THRESHOLD = 1.0  # seconds: less than this is left alone as noise
SLACK = timedelta(seconds=2)  # how far outside its call an event may still be its call's
UNANSWERED = timedelta(seconds=60)  # a call with no answer: how long it may have run
FOLD_CHARS = 200

# The events each planledger call can cause: its own (first) and those it may bring along.
CAUSES: dict[str, frozenset[str]] = {
    "session_start": frozenset({"session_started"}),
    "session_end": frozenset({"session_ended"}),
    "tasks_ready": frozenset({"ready_listed"}),
    "tasks_claim": frozenset({"claimed", "renewed", "bounced", "refused"}),
    "tasks_claim_next": frozenset({"claimed", "renewed"}),
    "tasks_complete": frozenset({"completed", "stale_fence"}),
    "tasks_release": frozenset({"released", "stale_fence"}),
    "tasks_drop": frozenset({"dropped", "stale_fence"}),
    "tasks_update": frozenset({"claimed", "renewed", "bounced", "refused", "completed",
                               "released", "dropped", "reopened", "stale_fence"}),
}
BROUGHT_ALONG: dict[str, frozenset[str]] = {
    "session_end": frozenset({"released"}),  # each claim the session still held
    "tasks_claim_next": frozenset({"ready_listed", "bounced"}),
}
# Refusals the ledger keeps a trace of (errors other than these leave none).
TRACED_REFUSALS = {"already claimed": "bounced", "blocked": "refused", "closed": "refused",
                   "stale fence": "stale_fence"}
SAME_STORY = {"claimed": {"claimed", "renewed"}, "bounced": {"bounced"},
              "refused": {"refused"}, "stale_fence": {"stale_fence"}}

FindingKind = Literal["unbound", "no_event", "disagrees", "not_in_transcript",
                      "clock_offset"]
Origin = Literal["transcript", "ledger", "both"]


@dataclass(frozen=True)
class LedgerLog:
    """The ledger's side: its lanes and entries (any sessions; merging picks the bound
    ones) and each plan's progress line."""

    lanes: tuple[Lane, ...]
    entries: tuple[Entry, ...]
    progress: tuple[str, ...] = ()


@dataclass(frozen=True)
class Clock:
    """The transcript's clock against the ledger's: `offset` seconds to add to the
    agent's times (None: no joined pair to tell), from `pairs` pairs that agree within
    `spread` seconds; `applied` when it is larger than the threshold."""

    offset: float | None
    pairs: int
    spread: float
    applied: bool


@dataclass(frozen=True)
class MergedLane:
    label: str
    transcript: str
    format: str
    client_session: str | None  # the agent's own session id (Claude Code, Codex)
    ledger_sessions: tuple[str, ...]
    clock: Clock
    skipped: dict[str, int]


@dataclass(frozen=True)
class Row:
    """One line of the figure, in lane `lane`, at `at` on the ledger's clock. `kind`:
    prompt, prose, tool (calls to other tools, `text` counts them), or, for a planledger
    call or an event, the ledger entry's kind (claimed, bounced, …). `full` holds the
    whole text when `text` is folded; `ledger` is the log's own account of the event."""

    at: datetime
    lane: int
    kind: str
    text: str
    origin: Origin
    full: str | None = None
    tool: str | None = None
    result: str | None = None
    ledger: str | None = None
    position: int | None = None
    step_id: str | None = None
    step_number: int | None = None
    step_title: str | None = None
    holder: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class Finding:
    kind: FindingKind
    lane: str
    text: str
    line: int | None = None
    position: int | None = None


@dataclass(frozen=True)
class MergedTimeline:
    lanes: tuple[MergedLane, ...]
    rows: tuple[Row, ...]
    findings: tuple[Finding, ...]
    story: tuple[str, ...]
    steps: tuple[tuple[int, str, str], ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: datetimes as ISO 8601 strings, tuples as lists."""
        plain: dict[str, Any] = _plain(self)
        return plain


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, datetime):
        return value.isoformat()
    return value


# --- binding -----------------------------------------------------------------------

def bound_sessions(transcript: Transcript) -> tuple[str, ...]:
    """The ledger sessions the transcript's planledger calls name, in order."""
    started, named = [], []
    for call in _calls(transcript):
        answer = result_json(call) or {}
        if call.tool == "session_start" and isinstance(answer.get("session_id"), str):
            started.append(answer["session_id"])
        args = call.arguments if isinstance(call.arguments, dict) else {}
        for candidate in (args.get("session_id"), _token_session(args.get("token")),
                          _holder(answer)):
            if isinstance(candidate, str) and candidate:
                named.append(candidate)
    return tuple(dict.fromkeys(started or named))


def _token_session(token: Any) -> str | None:
    if not isinstance(token, str):
        return None
    session, dot, _ = token.partition(".")
    return session if dot else None


def _calls(transcript: Transcript) -> list[ToolCall]:
    return [i.call for i in transcript.items if i.call is not None and i.call.tool]


# --- joining -----------------------------------------------------------------------

@dataclass
class _Join:
    primary: Entry
    along: list[Entry]


def _joinable(items: list[tuple[int, Item]], entries: list[Entry],
              offset: float | None) -> dict[int, _Join]:
    """Each planledger call (by item index) with the event it caused, in order."""
    joined: dict[int, _Join] = {}
    used: set[int] = set()
    last = 0
    for index, item in items:
        call = item.call
        assert call is not None and call.tool is not None
        causes = CAUSES.get(call.tool)
        if causes is None:
            continue
        step = call.arguments.get("id") if isinstance(call.arguments, dict) else None
        primary = next((e for e in entries if e.position > last and e.position not in used
                        and e.kind in causes and (not step or not e.step_id or e.step_id == step)
                        and (offset is None or _within(e, item, offset))), None)
        if primary is None:
            continue
        along = [e for e in entries if last < e.position < primary.position
                 and e.position not in used
                 and e.kind in BROUGHT_ALONG.get(call.tool, frozenset())]
        joined[index] = _Join(primary, along)
        used.update(e.position for e in (primary, *along))
        last = primary.position
    return joined


def _within(entry: Entry, item: Item, offset: float) -> bool:
    assert item.call is not None
    moment = entry.at - timedelta(seconds=offset)  # on the agent's clock
    until = item.call.answered_at or item.at + UNANSWERED
    return item.at - SLACK <= moment <= until + SLACK


def _middle(item: Item) -> datetime:
    assert item.call is not None
    answered = item.call.answered_at or item.at
    return item.at + (answered - item.at) / 2


def _clock(items: dict[int, Item], joined: dict[int, _Join], threshold: float) -> Clock:
    gaps = [(j.primary.at - _middle(items[i])).total_seconds() for i, j in joined.items()]
    if not gaps:
        return Clock(None, 0, 0.0, False)
    offset = statistics.median(gaps)
    spread = max(abs(g - offset) for g in gaps)
    return Clock(round(offset, 6), len(gaps), round(spread, 6), abs(offset) > threshold)


# --- merging -----------------------------------------------------------------------

def merge(transcripts: list[Transcript], log: LedgerLog,
          clock_threshold: float = DEFAULT_CLOCK_THRESHOLD) -> MergedTimeline:
    """The transcripts' lanes, each with its sessions' events, on the ledger's clock."""
    names = {lane.session_id: lane.name for lane in log.lanes if lane.session_id}
    lanes: list[MergedLane] = []
    per_lane: list[list[Row]] = []
    findings: list[Finding] = []
    for number, transcript in enumerate(transcripts):
        sessions = bound_sessions(transcript)
        label = _label(transcript, sessions, names, [lane.label for lane in lanes])
        entries = [e for e in log.entries if e.session_id in sessions]
        planledger = [(i, item) for i, item in enumerate(transcript.items)
                      if item.call is not None and item.call.tool is not None]
        by_index = dict(planledger)
        first = _joinable(planledger, entries, None)
        clock = _clock(by_index, first, clock_threshold)
        joined = first if clock.offset is None else _joinable(planledger, entries, clock.offset)
        clock = _clock(by_index, joined, clock_threshold) if joined else clock
        lanes.append(MergedLane(label, transcript.name, transcript.format, transcript.session,
                                sessions, clock, transcript.skipped))
        shift = timedelta(seconds=clock.offset or 0.0) if clock.applied else timedelta()
        per_lane.append(_lane_rows(number, transcript, entries, joined, shift))
        findings += _findings(label, transcript, sessions, entries, joined, clock)
    timeline = Timeline(tuple(Lane(s, names.get(s), lane.label) for lane in lanes
                              for s in lane.ledger_sessions),
                        tuple(e for e in log.entries
                              if any(e.session_id in lane.ledger_sessions for lane in lanes)),
                        ())
    story = (*render.story(timeline), *(f"plan:   {line}" for line in log.progress))
    return MergedTimeline(tuple(lanes), tuple(_interleave(per_lane)), tuple(findings),
                          story, tuple(render.steps_named(timeline)))


def _label(transcript: Transcript, sessions: tuple[str, ...], names: dict[str, str | None],
           taken: list[str]) -> str:
    named = next((names[s] for s in sessions if names.get(s)), None)
    label = named or transcript.name.removesuffix(".jsonl")
    return label if label not in taken else f"{label} ({transcript.name})"


def _lane_rows(lane: int, transcript: Transcript, entries: list[Entry],
               joined: dict[int, _Join], shift: timedelta) -> list[Row]:
    rows: list[Row] = []
    others: list[Item] = []  # consecutive calls of other tools, shown as one row

    def flush() -> None:
        if others:
            rows.append(_other_tools(lane, others, shift))
            others.clear()

    for index, item in enumerate(transcript.items):
        if item.call is not None and item.call.tool is None:
            others.append(item)
            continue
        flush()
        join = joined.get(index)
        if join is not None:
            rows += [_event_row(lane, e) for e in join.along]
            rows.append(_call_row(lane, item, join.primary, shift))
        elif item.call is not None:
            rows.append(_call_row(lane, item, None, shift))
        else:
            rows.append(_said_row(lane, item, shift))
    flush()
    taken = {e.position for j in joined.values() for e in (j.primary, *j.along)}
    for entry in entries:
        if entry.position not in taken:
            at = next((i for i, r in enumerate(rows) if r.at > entry.at), len(rows))
            rows.insert(at, _event_row(lane, entry))
    return rows


def _fold(text: str) -> tuple[str, str | None]:
    """Two lines and at most FOLD_CHARS characters; the whole text when that folds it."""
    lines = [line for line in text.splitlines() if line.strip()]
    short = " ".join(lines[:2])
    if len(short) > FOLD_CHARS:
        short = short[:FOLD_CHARS - 1].rstrip() + "…"
    return short, (text if short != " ".join(lines) else None)


def _said_row(lane: int, item: Item, shift: timedelta) -> Row:
    text, full = _fold(item.text)
    return Row(item.at + shift, lane, item.kind, text, "transcript", full=full, line=item.line)


def _other_tools(lane: int, items: list[Item], shift: timedelta) -> Row:
    names = list(dict.fromkeys(i.text for i in items))
    count = f"{len(items)}\N{MULTIPLICATION SIGN} " if len(items) > 1 else ""
    text = f"{count}{', '.join(names)}"[:FOLD_CHARS]
    full = "\n".join(f"{i.text} {_short_arguments(i.call)}" for i in items if i.call)
    return Row(items[0].at + shift, lane, "tool", text, "transcript", full=full,
               line=items[0].line)


def _short_arguments(call: ToolCall) -> str:
    args = call.arguments
    if isinstance(args, dict):
        first = next((v for k, v in args.items() if k in ("command", "file_path", "path",
                                                          "pattern", "url")), None)
        if isinstance(first, str):
            return first[:FOLD_CHARS]
    return ""


def _call_row(lane: int, item: Item, entry: Entry | None, shift: timedelta) -> Row:
    call = item.call
    assert call is not None and call.tool is not None
    step = _step_ref(call, entry)
    answer = _answer(call)
    text = f"{call.tool}{' ' + step if step else ''}" + (f" → {answer}" if answer else "")
    if entry is None:
        return Row(item.at + shift, lane, "call", text, "transcript", tool=call.name,
                   result=answer, line=item.line)
    return Row(entry.at, lane, entry.kind, text, "both", tool=call.name, result=answer,
               ledger=entry.text, position=entry.position, step_id=entry.step_id,
               step_number=entry.step_number, step_title=entry.step_title,
               holder=entry.holder, line=item.line)


def _event_row(lane: int, entry: Entry) -> Row:
    return Row(entry.at, lane, entry.kind, entry.text, "ledger", ledger=entry.text,
               position=entry.position, step_id=entry.step_id, step_number=entry.step_number,
               step_title=entry.step_title, holder=entry.holder)


def _step_ref(call: ToolCall, entry: Entry | None) -> str:
    if entry is not None and entry.step_number is not None:
        return f"step {entry.step_number}"
    step = call.arguments.get("id") if isinstance(call.arguments, dict) else None
    return f"{step[:10]}…" if isinstance(step, str) and len(step) > 10 else str(step or "")


def _answer(call: ToolCall) -> str:
    """The answer in a few words, as the seed's figure reads it."""
    if call.result is None:
        return ""
    answer = result_json(call)
    if answer is None:
        return _fold(call.result)[0]
    if isinstance(answer.get("ready"), list):
        count = len(answer["ready"])
        return f"{count} step{'s' * (count != 1)} ready"
    claim = answer.get("claimed") if call.tool == "tasks_claim_next" else answer
    if isinstance(claim, dict) and isinstance(_holder(claim), str):
        renewed = " (heartbeat)" if claim.get("renewed") is True else ""
        return f'holder "{_holder(claim)}"{renewed}'
    if isinstance(answer.get("message"), str):
        return _fold(answer["message"])[0]
    status, progress = answer.get("status"), answer.get("progress")
    if isinstance(status, str):
        return status + (f" ({progress})" if isinstance(progress, str) else "")
    if call.tool == "session_start" and isinstance(answer.get("session_id"), str):
        return f'session_id "{answer["session_id"]}"'
    return _fold(call.result)[0]


def _said(call: ToolCall) -> str | None:
    """What the answer says the ledger did (claimed, bounced, …), None when it says
    nothing the log would keep (a read, an error with no trace)."""
    if call.result is None or call.tool not in CAUSES or call.tool == "tasks_ready":
        return None
    if call.is_error:
        lowered = call.result.lower()
        return next((kind for words, kind in TRACED_REFUSALS.items() if words in lowered), None)
    answer = result_json(call)
    if answer is None:
        return None
    if call.tool == "tasks_claim_next":
        return "claimed" if isinstance(answer.get("claimed"), dict) else None
    if call.tool in ("tasks_claim",):
        return "claimed" if isinstance(_holder(answer), str) else None
    return {"session_start": "session_started", "session_end": "session_ended",
            "tasks_complete": "completed", "tasks_release": "released",
            "tasks_drop": "dropped"}.get(call.tool or "")


def _findings(label: str, transcript: Transcript, sessions: tuple[str, ...],
              entries: list[Entry], joined: dict[int, _Join], clock: Clock) -> list[Finding]:
    found: list[Finding] = []
    if not sessions:
        found.append(Finding("unbound", label, f"{transcript.name}: no planledger session "
                             "found (no session_start answer, session_id or token argument): "
                             "its lane shows the transcript alone"))
    if clock.applied and clock.offset is not None:
        way = "behind" if clock.offset > 0 else "ahead of"
        found.append(Finding("clock_offset", label, f"{label}: the transcript's clock is "
                             f"{abs(clock.offset):.3f} s {way} the ledger's (median of "
                             f"{clock.pairs} joined calls, spread {clock.spread:.3f} s); its "
                             "times are shifted onto the ledger's clock"))
    for index, item in enumerate(transcript.items):
        call = item.call
        said = _said(call) if call is not None else None
        join = joined.get(index)
        if call is None or said is None:
            continue
        if join is None:
            found.append(Finding("no_event", label, f"{label}: line {item.line}: {call.tool} "
                                 f'answered "{_answer(call)}", but the log holds no such event '
                                 f"of session {', '.join(sessions) or '(none bound)'}",
                                 line=item.line))
        elif join.primary.kind not in SAME_STORY.get(said, {said}):
            found.append(Finding("disagrees", label, f"{label}: line {item.line}: {call.tool} "
                                 f'answered "{_answer(call)}", but the log says: '
                                 f"{join.primary.text}", line=item.line,
                                 position=join.primary.position))
    taken = {e.position for j in joined.values() for e in (j.primary, *j.along)}
    for entry in entries:
        if entry.position not in taken and not _follows_an_end(entry, taken, entries):
            found.append(Finding("not_in_transcript", label, f"{label}: log position "
                                 f"{entry.position}: {entry.text}: the transcript never "
                                 "mentions it", position=entry.position))
    return found


def _follows_an_end(entry: Entry, taken: set[int], entries: list[Entry]) -> bool:
    """A claim released because its session ended: the session_end call explains it."""
    return entry.kind == "released" and any(
        e.kind == "session_ended" and e.position in taken and e.position > entry.position
        for e in entries)


def _interleave(lanes: list[list[Row]]) -> list[Row]:
    """One sequence: each lane in its own order; rows the log holds in log order across
    lanes (a lane whose next logged row comes first in the log goes first, with whatever
    its transcript says before it); the rest by time."""
    heads = [0] * len(lanes)
    merged: list[Row] = []
    while True:
        ready = [(n, rows[heads[n]]) for n, rows in enumerate(lanes) if heads[n] < len(rows)]
        if not ready:
            return merged
        lane, row = min(ready, key=lambda c: (c[1].at, c[0]))
        if row.position is not None:
            pending = [(p, n) for n, rows in enumerate(lanes)
                       if (p := _next_position(rows, heads[n])) is not None]
            lane = min(pending)[1]
        merged.append(lanes[lane][heads[lane]])
        heads[lane] += 1


def _next_position(rows: list[Row], start: int) -> int | None:
    return next((r.position for r in rows[start:] if r.position is not None), None)


def _holder(claim: dict[str, Any]) -> Any:
    """A claim answer's holder: `holder` since 0.3.0, `claimed_by` in older transcripts."""
    return claim.get("holder", claim.get("claimed_by"))
