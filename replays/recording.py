"""Export a log, or part of it, to a recording; import a recording into a fresh store.

A part of the log (see `replays.selection`) comes with the earlier events it depends on,
marked `context`, so every recording imports, folds and re-executes on its own.
"""

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields, is_dataclass
from datetime import datetime

from eventsourcing.persistence import Notification, StoredEvent

from ledger.domain import events as ev
from ledger.storage import MEMORY, store_settings
from ledger.store import EventStore
from projections.log import PAGE, page_after
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
from replays.selection import Decoded, choose

EPOCH = "1970-01-01T00:00:00+00:00"


def read_log(store: EventStore) -> Iterator[Notification]:
    position = 0
    while True:
        notes = page_after(store, position)
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
    matched, kept = choose(log, selection, of)
    events = tuple(_record(n, e, of.get(n.id), n.id not in matched)
                   for n, e in log if n.id in kept)
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
            _check_fields(store.mapper.to_domain_event(event))
        except Exception as error:  # any failure to decode: refuse the file, name the event
            raise RecordingError(f"event at position {record.position} ({record.topic}) "
                                 f"cannot be read: {error}") from None
    store.recorder.insert_events(stored)
    return len(stored)


def _check_fields(event: object) -> None:
    """The state must carry exactly its event's fields: the decoder takes any dict, and a
    store holding an event short of a field breaks every read of its stream."""
    if not is_dataclass(event):
        raise ValueError("not an event")
    have = set(vars(event))
    want = {f.name for f in fields(event)}
    if have != want:
        missing, extra = sorted(want - have), sorted(have - want)
        raise ValueError(f"fields missing: {', '.join(missing) or 'none'}; "
                         f"unexpected: {', '.join(extra) or 'none'}")


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
