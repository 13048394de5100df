"""Export a log, or part of it, to a recording; import a recording into a fresh store.

A part of the log (see `replays.selection`) comes with the earlier events it depends on,
marked `context`, so every recording imports, folds and re-executes on its own.
"""

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from eventsourcing.persistence import Notification

from planledger.infra.persistence import open_event_store
from planledger.ledger.domain import events as ev
from planledger.ledger.notification_log import decoder, insert_stored
from planledger.ledger.storage import MEMORY
from planledger.ledger.store import EventStore
from planledger.projections.log import PAGE, page_after
from planledger.replays.admission import admit
from planledger.replays.derive import derive
from planledger.replays.format import (
    CommandRecord,
    EventRecord,
    Header,
    Recording,
    RecordingError,
    Selection,
    canonical,
)
from planledger.replays.selection import Decoded, choose

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
    to_event = decoder(store)
    log: Decoded = [(n, to_event(n)) for n in read_log(store)]
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
    transaction, once all of them are admitted (replays.admission): every event of its
    type, keeping the domain's rules, whole in its stream's hash chain. All of it lands or
    none. Returns the number of events written."""
    held = store.log_end()
    if held:
        raise RecordingError(f"the target store is not empty (it holds {held} events); "
                             f"import needs a fresh store")
    _check_whole_streams(recording.events)
    stored = admit(decoder(store), recording.events)
    insert_stored(store, stored)
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
    """The recording's events as (position, domain event), decoded as the store would,
    once all of them are admitted (see `import_into`)."""
    store = open_event_store(MEMORY)
    try:
        _check_whole_streams(recording.events)
        to_event = decoder(store)
        stored = admit(to_event, recording.events)
        return [(e.position, to_event(s))
                for e, s in zip(recording.events, stored, strict=True)]
    finally:
        store.close()
