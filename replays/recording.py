"""Export a log, or part of it, to a recording; import a recording into a fresh store.

A part is chosen by plan, sessions and time window; it is then widened so that every
stream it touches starts whole (the earlier events are kept, marked `context`) and every
command it touches is complete, because read models fold streams from their first event.
"""

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from eventsourcing.persistence import Notification, StoredEvent

from ledger.domain import events as ev
from ledger.storage import MEMORY, store_settings
from ledger.store import EventStore
from replays.commands import derive
from replays.format import (
    CommandRecord,
    EventRecord,
    Header,
    Recording,
    RecordingError,
    Selection,
    canonical,
)

PAGE = 1000
EPOCH = "1970-01-01T00:00:00+00:00"
Decoded = list[tuple[Notification, object]]


def read_log(store: EventStore) -> Iterator[Notification]:
    position = 0
    while True:
        notes = store.recorder.select_notifications(start=position, limit=PAGE,
                                                    inclusive_of_start=False)
        yield from notes
        if len(notes) < PAGE:
            return
        position = notes[-1].id


EVERYTHING = Selection()


def export(store: EventStore, selection: Selection = EVERYTHING,
           exported_at: datetime | None = None) -> Recording:
    """The recording of `selection` (everything by default) of the store's log."""
    log: Decoded = [(n, store.mapper.to_domain_event(n)) for n in read_log(store)]
    commands, of = derive((n.id, e) for n, e in log)
    chosen = _widen(log, _matches(log, selection), of)
    events = tuple(_record(n, e, of.get(n.id), n.id not in chosen.matched)
                   for n, e in log if n.id in chosen.kept)
    used = {e.command for e in events}
    kept_commands = tuple(c for c in commands if c.seq in used)
    header = Header(selection, partial=not selection.everything, commands=len(kept_commands),
                    events=len(events), exported_at=exported_at)
    return Recording(header, kept_commands, events)


def _record(note: Notification, event: object, command: int | None, context: bool) -> EventRecord:
    state = json.loads(note.state)
    if canonical(state) != note.state:
        raise RecordingError(f"event at position {note.id} is not stored as plain JSON; "
                             f"it cannot be recorded byte for byte")
    if isinstance(event, ev.LedgerEvent):
        time, session = event.timestamp, event.session_id
    else:  # another layer's event (an API rider): what its own state says, if anything
        stamp = state.get("timestamp")
        time = datetime.fromisoformat(stamp["_data_"] if isinstance(stamp, dict) else EPOCH)
        session = state.get("session_id") if isinstance(state.get("session_id"), str) else None
    return EventRecord(note.id, time, session, str(note.originator_id),
                       note.originator_version, note.topic, state, command, context)


def _matches(log: Decoded, selection: Selection) -> set[int]:
    """Positions of the events the selection asks for."""
    steps = _plan_steps(log, selection.plan) if selection.plan else set()
    matched = set()
    for note, event in log:
        if not isinstance(event, ev.LedgerEvent):
            if selection.everything:
                matched.add(note.id)
            continue
        if selection.sessions and not {event.session_id, event.originator_id} & set(
                selection.sessions):
            continue
        if selection.since and event.timestamp < selection.since:
            continue
        if selection.until and event.timestamp > selection.until:
            continue
        if selection.plan is None or _about(event, selection.plan, steps):
            matched.add(note.id)
    if selection.plan:  # the start and end of every session that acted on the plan
        actors = {e.session_id for n, e in log if n.id in matched
                  and isinstance(e, ev.LedgerEvent)}
        matched |= {n.id for n, e in log if isinstance(e, ev.SessionStarted | ev.SessionEnded)
                    and e.originator_id in actors}
    return matched


def _plan_steps(log: Decoded, plan: str) -> set[str]:
    return {e.step_id for _, e in log
            if isinstance(e, ev.StepAdded) and e.originator_id == f"plan:{plan}"}


def _about(event: ev.LedgerEvent, plan: str, steps: set[str]) -> bool:
    if event.originator_id == f"plan:{plan}" or event.originator_id in steps:
        return True
    if isinstance(event, ev.ReadyListed):
        return event.plan == plan
    return getattr(event, "step_id", None) in steps


class _Chosen:
    def __init__(self, matched: set[int], kept: set[int]) -> None:
        self.matched, self.kept = matched, kept


def _widen(log: Decoded, matched: set[int], of: dict[int, int]) -> _Chosen:
    """Add earlier events of every touched stream, and the rest of every touched command,
    until nothing more is added."""
    kept = set(matched)
    while True:
        last: dict[str, int] = {}
        for note, _ in log:
            if note.id in kept:
                last[str(note.originator_id)] = note.originator_version
        commands = {of[p] for p in kept if p in of}
        more = {n.id for n, _ in log if n.originator_version <= last.get(str(n.originator_id), 0)
                or of.get(n.id) in commands}
        if more <= kept:
            return _Chosen(matched, kept)
        kept |= more


# --- import ---------------------------------------------------------------------


def import_into(store: EventStore, recording: Recording) -> int:
    """Write every event of the recording into `store`, which must be empty, in one
    transaction: all of it lands or none. Returns the number of events written."""
    held = store.recorder.max_notification_id() or 0
    if held:
        raise RecordingError(f"the target store is not empty (it holds {held} events); "
                             f"import needs a fresh store")
    _check_whole_streams(recording.events)
    stored = [StoredEvent(e.stream, e.version, e.topic, e.state_bytes())
              for e in recording.events]
    for record, event in zip(recording.events, stored, strict=True):
        try:
            store.mapper.to_domain_event(event)
        except Exception as error:  # any failure to decode: refuse the file, name the event
            raise RecordingError(f"event at position {record.position} ({record.topic}) "
                                 f"cannot be read: {error}") from None
    store.recorder.insert_events(stored)
    return len(stored)


def _check_whole_streams(events: Sequence[EventRecord]) -> None:
    seen: dict[str, int] = {}
    for e in events:
        expected = seen.get(e.stream, 0) + 1
        if e.version != expected:
            raise RecordingError(f"stream {e.stream} jumps to version {e.version} at position "
                                 f"{e.position} (expected {expected}): the recording lacks "
                                 f"earlier events of it")
        seen[e.stream] = e.version


def commands_of(recording: Recording) -> Iterable[tuple[CommandRecord, list[EventRecord]]]:
    """Each command with the ledger events it caused, in order."""
    grouped: dict[int, list[EventRecord]] = {}
    for e in recording.events:
        if e.command is not None:
            grouped.setdefault(e.command, []).append(e)
    return [(c, grouped.get(c.seq, [])) for c in recording.commands]


def decode(recording: Recording) -> list[tuple[int, object]]:
    """The recording's events as (position, domain event), decoded as the store would."""
    store = EventStore(store_settings(MEMORY))
    try:
        return [(e.position, store.mapper.to_domain_event(
            StoredEvent(e.stream, e.version, e.topic, e.state_bytes()))) for e in recording.events]
    except Exception as error:  # an unknown topic or a state the event cannot take
        raise RecordingError(f"the recording holds an event this planledger cannot read: "
                             f"{error}") from None
    finally:
        store.close()
