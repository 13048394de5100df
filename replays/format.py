"""The recording file: versioned JSON Lines (documented in `replays/README.md`).

Line 1 is the header (format name, schema version, selection, counts). Then, in log
order, each command line comes right before the first event it caused. This module holds
the records and writes them; `replays.reading` reads and checks them.
"""

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

FORMAT = "planledger-recording"
SCHEMA = 1  # bump on any incompatible change; readers for older versions stay

COMMAND_NAMES = frozenset({
    "start_session", "end_session", "create_plan", "add_step", "revise_step",
    "declare_dependencies", "list_ready", "claim", "complete", "release", "drop",
    "force_release", "reopen", "note", "issue_key", "revoke_key", "review",
})


class RecordingError(Exception):
    """A recording that cannot be read or used; the message says where and why."""


@dataclass(frozen=True)
class Selection:
    """What part of a log a recording holds; all empty means all of it."""

    plan: str | None = None
    sessions: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None

    @property
    def everything(self) -> bool:
        return self == Selection()


@dataclass(frozen=True)
class Header:
    selection: Selection
    partial: bool
    commands: int
    events: int
    exported_at: datetime | None = None
    schema: int = SCHEMA


@dataclass(frozen=True)
class CommandRecord:
    """A ledger call reconstructed from its events: `ids` are the new ids it drew."""

    seq: int
    at: datetime
    session: str | None
    name: str
    args: dict[str, Any]
    ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class EventRecord:
    """A stored event. `state` is the store's JSON; its bytes are `state_bytes()`.
    `context` marks events outside the selection kept so every stream starts whole; `line`
    is the file line it was read from (0: not read from a file)."""

    position: int
    time: datetime
    session: str | None
    stream: str
    version: int
    topic: str
    state: dict[str, Any]
    command: int | None
    context: bool = False
    line: int = field(default=0, compare=False)

    def state_bytes(self) -> bytes:
        return canonical(self.state)


@dataclass(frozen=True)
class Recording:
    header: Header
    commands: tuple[CommandRecord, ...]
    events: tuple[EventRecord, ...]
    _by_seq: dict[int, CommandRecord] = field(default_factory=dict, compare=False, repr=False)

    def command(self, seq: int) -> CommandRecord:
        if not self._by_seq:
            self._by_seq.update((c.seq, c) for c in self.commands)
        return self._by_seq[seq]


def canonical(state: dict[str, Any]) -> bytes:
    """The bytes the event store keeps for a state: compact UTF-8 JSON, keys as given."""
    return json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# --- writing --------------------------------------------------------------------


def write(recording: Recording, out: TextIO) -> None:
    for line in _lines(recording):
        out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")


def write_file(recording: Recording, path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        write(recording, out)


def _lines(recording: Recording) -> Iterable[dict[str, Any]]:
    header, sel = recording.header, recording.header.selection
    yield {"type": "header", "format": FORMAT, "schema": header.schema,
           "exported_at": _iso(header.exported_at),
           "selection": {"plan": sel.plan, "sessions": list(sel.sessions),
                         "since": _iso(sel.since), "until": _iso(sel.until)},
           "partial": header.partial, "commands": header.commands, "events": header.events}
    written: set[int] = set()
    for event in recording.events:
        if event.command is not None and event.command not in written:
            written.add(event.command)
            c = recording.command(event.command)
            yield {"type": "command", "seq": c.seq, "at": c.at.isoformat(),
                   "session": c.session, "name": c.name, "args": c.args, "ids": list(c.ids)}
        line = {"type": "event", "position": event.position, "time": event.time.isoformat(),
                "session": event.session, "stream": event.stream, "version": event.version,
                "topic": event.topic, "state": event.state, "command": event.command}
        if event.context:
            line["context"] = True
        yield line


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
