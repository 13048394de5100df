"""States that commands read inside a write unit, kept current by following the log.

Where a command's reads and append share one write transaction that holds the lock from
its start (SQLite, infra.sqlite_file), nothing but that transaction can append until it
ends. So one read of the log's last position tells whether anything was appended since
this process last looked: if nothing was, every state kept here is current and the command
reads none of its streams again (a claim + complete cycle read four streams, each a SELECT
that found nothing new). What was appended in between, by another process or another store
on the same file, marks its streams stale: they are read (fast-forwarded) at their next use.

Read only inside such units, which one process runs one at a time (its writer lock); a
unit's own appends are folded in after its commit, when the next unit may have begun, so
each change is made under a lock of its own. A state folded in late is at worst older than
one read meanwhile: it is dropped, or read again; `position` only ever names a log position
up to which every kept state was current. Reads outside units keep using the library's
aggregate cache.
"""

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol


class Appended(Protocol):
    @property
    def originator_id(self) -> str: ...
    @property
    def originator_version(self) -> int: ...


# The fold of an event onto a kept state (None before the stream's first event), or None
# where this kind of state is not folded here (its stream is read again instead).
FoldFor = Callable[[Any, Appended], Callable[[Any, list[Any]], Any] | None]


class FollowedStates:
    """Stream states current up to `position` in the log, least recently used dropped."""

    def __init__(self, size: int) -> None:
        self._states: OrderedDict[str, Any] = OrderedDict()
        self._stale: set[str] = set()
        self._size = size
        self._lock = threading.Lock()
        self.position: int | None = None

    def catch_up(self, top: int, streams_in: Callable[[int, int], Iterable[str]]) -> None:
        """The log now ends at `top`; `streams_in(after, upto)` names the streams appended
        at positions after..upto. Far behind (or a log that shrank: a file replaced), it is
        cheaper to forget everything than to read what happened."""
        with self._lock:
            behind = None if self.position is None else top - self.position
            if behind is None or behind < 0 or behind > self._size:
                self._states.clear()
                self._stale.clear()
            elif behind:
                assert self.position is not None
                streams = set(streams_in(self.position, top))
                self._stale.update(streams.intersection(self._states))
            self.position = top

    def get(self, stream: str) -> Any | None:
        """The stream's state if kept and current, else None (read it and `put` it)."""
        with self._lock:
            return self._get(stream)

    def put(self, stream: str, state: Any) -> None:
        with self._lock:
            self._put(stream, state)

    def forget(self, streams: Iterable[str]) -> None:
        """Drop these streams' states (they went quiet); a next use reads them again."""
        with self._lock:
            for stream in streams:
                self._states.pop(stream, None)
                self._stale.discard(stream)

    def forget_all(self) -> None:
        """Drop every state, and the position they were current at: the next unit reads
        each stream again."""
        with self._lock:
            self._states.clear()
            self._stale.clear()
            self.position = None

    def committed(
        self, events: Sequence[Appended], position: int, fold_for: FoldFor
    ) -> dict[str, Any]:
        """A unit that caught up has committed `events`, the last at `position`: fold them
        onto their kept states (a state not right before its event, or one not folded here,
        is dropped), and the log is followed up to there. Returns the states folded."""
        folded: dict[str, Any] = {}
        with self._lock:
            for event in events:
                stream, version = event.originator_id, event.originator_version
                known = self._get(stream)
                fold = fold_for(known, event)
                at_next = (known is None and version == 1) or (
                    known is not None and known.version == version - 1)
                if fold is not None and at_next:
                    folded[stream] = state = fold(known, [event])
                    self._put(stream, state)
                else:
                    folded.pop(stream, None)
                    self._states.pop(stream, None)
                    self._stale.discard(stream)
            self.position = position
        return folded

    def _get(self, stream: str) -> Any | None:
        if stream in self._stale:
            return None
        state = self._states.get(stream)
        if state is not None:
            self._states.move_to_end(stream)
        return state

    def _put(self, stream: str, state: Any) -> None:
        self._states[stream] = state
        self._states.move_to_end(stream)
        self._stale.discard(stream)
        if len(self._states) > self._size:
            dropped, _ = self._states.popitem(last=False)
            self._stale.discard(dropped)
