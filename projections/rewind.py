"""Telling that the log lost events a read model folded.

With asynchronous replication, a failover to a promoted standby can lose the log's newest
events. A read model that folded them is then ahead of the log, and stays wrong for good:
it skips every later event at or below its position. Comparing the log's end with the
model's position does not tell it: new events may get higher positions than the lost
ones (a promoted server's sequence jumps ahead), or the same ones.

So a model remembers the position and identity (stream, version) of the last event it
folded, and reads the log from that position inclusive: the first row read must be that
event. Anything else means the log was rewound, and the model must be folded again.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from eventsourcing.persistence import Notification

__all__ = ["Folded", "LogRewound", "Row", "folded", "lost"]


class Row(Protocol):
    """What is compared of an event as stored (the library's Notification has it)."""

    @property
    def id(self) -> int: ...
    @property
    def originator_id(self) -> object: ...
    @property
    def originator_version(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Folded:
    """The last event a read model folded: where it stood in the log, and which it was."""

    position: int
    stream: str
    version: int


class LogRewound(Exception):
    """The log no longer holds the last event the read model folded (a failover lost the
    log's newest events): the model was folded again from the log, up to `position`."""

    def __init__(self, position: int, why: str) -> None:
        super().__init__(f"the log was rewound ({why}); the read model is folded again, "
                         f"up to position {position}")
        self.position = position
        self.why = why


def folded(note: "Row | Notification") -> Folded:
    return Folded(note.id, str(note.originator_id), note.originator_version)


def lost(position: int, last: Folded | None, found: Row | None) -> str | None:
    """Why the log no longer holds the event a model folded last, at `position` (None: it
    does, or the model folded nothing). `found` is the log's first event at or after
    `position`; `last` is what the model knows of its event (None, or another position:
    only the position is known, as after a checkpoint is restored)."""
    if position <= 0:
        return None
    if found is None:
        return f"the log ends before position {position}"
    if found.id != position:
        return f"the log holds no event at position {position}"
    if last is None or last.position != position:
        return None
    stream, version = str(found.originator_id), found.originator_version
    if (stream, version) != (last.stream, last.version):
        return (f"position {position} holds {stream} version {version}, "
                f"not {last.stream} version {last.version}")
    return None
