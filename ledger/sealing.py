"""The hash chain (see ledger.chain) wired into the `eventsourcing` library's event store.

`SealingEventStore.put` seals each stored event with the hash of the one before it in its
stream, in the same insert as the events: a conflicting append (another writer took the
version) fails as a whole, so a sealed chain never forks. It notes the hashes it reads
from and writes to the store, so an append (which always follows a read of its streams)
rarely has to read the previous hash again. `UnsealingMapper` takes the chain keys off
events read back, so domain events never see them. Snapshots live beside the log and are
never sealed.

An append can be encoded ahead of its write transaction (`encode`, then `put_encoded`): the
encoding, and the sealing of every chain the append itself starts (version 1 onwards, from
GENESIS), depend on nothing another writer can change, so only the insert, and the sealing
of events that follow stored ones, wait for the write lock. A new 1,000-step plan is 2,001
such events: most of its append's CPU time, which claims no longer wait behind.
"""

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from json.scanner import make_scanner
from typing import Any, cast

from eventsourcing.persistence import (
    Cipher,
    Compressor,
    DatetimeAsISO,
    EventStore,
    JSONTranscoder,
    Mapper,
    Notification,
    Recording,
    StoredEvent,
    Transcoder,
    find_id_convertor,
)
from eventsourcing.utils import resolve_topic

from planledger.ledger.chain import GENESIS, HASH_KEY, PREV_KEY, hash_of, seal
from planledger.ledger.stored_form import event_from
from planledger.ledger.turns import TURN, each_in_turns

HEADS_KEPT = 50_000


class Heads:
    """The latest known hash of recently used streams: (version, hash) per stream. Only
    hashes read from the store or of events it accepted are noted: a stored event never
    changes, so a noted (stream, version) hash stays true."""

    def __init__(self, size: int = HEADS_KEPT) -> None:
        self._heads: OrderedDict[str, tuple[int, str]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def note(self, heads: Iterable[tuple[str, int, str]]) -> None:
        """Note each (stream, version, hash), under one taking of the lock."""
        with self._lock:
            for stream, version, digest in heads:
                known = self._heads.get(stream)
                if known is None or known[0] < version:
                    self._heads[stream] = (version, digest)
                    self._heads.move_to_end(stream)
                    if len(self._heads) > self._size:
                        self._heads.popitem(last=False)

    def forget(self, streams: Iterable[str]) -> None:
        """Drop what is noted of these streams (hashes of events that were rolled back, or
        of streams that went quiet)."""
        with self._lock:
            for stream in streams:
                self._heads.pop(stream, None)

    def forget_all(self) -> None:
        """Drop every noted hash (the log lost events some of them were of)."""
        with self._lock:
            self._heads.clear()

    def get(self, stream: str, version: int) -> str | None:
        with self._lock:
            known = self._heads.get(stream)
        return known[1] if known is not None and known[0] == version else None


class UnsealingMapper(Mapper[str]):
    """The library's mapper; events read back lose their chain keys.

    Every read model folds every event it reads, so decoding is most of a read: an
    event whose bytes are one JSON object, as stored, is decoded here the library's way
    (its transcoder's object hook, its id convertor, upcasting) with what it looks up for
    each event kept per kind, and the JSON scanned without the decoder's checks for
    surrounding whitespace; anything else goes the library's own way, errors included."""

    def __init__(self, transcoder: Transcoder, compressor: Compressor | None = None,
                 cipher: Cipher | None = None) -> None:
        super().__init__(transcoder, compressor, cipher)
        # What the transcoder's `decode` runs, unwrapped: its JSON scanner, with its object
        # hook (`_typed`) written for the many dates of our events.
        self._scan: Callable[[str, int], tuple[Any, int]] | None = None
        if isinstance(transcoder, JSONTranscoder) and compressor is None and cipher is None:
            self._names = transcoder.names
            self._scan = make_scanner(cast(Any, json.JSONDecoder(object_hook=self._typed)))
        self._kinds: dict[tuple[str, type], tuple[type, Callable[[Any], Any], int]] = {}

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        event = self._decoded(stored_event) if self._scan is not None else None
        if event is None:
            event = super().to_domain_event(stored_event)
            state = vars(event)
            state.pop(HASH_KEY, None)
            state.pop(PREV_KEY, None)
        return event

    def _typed(self, found: dict[str, Any]) -> Any:
        """JSONTranscoder._decode_obj's answer: a registered type's value for a two-key
        object naming it, else the object. A date the library's way, without its call."""
        if len(found) != 2 or "_type_" not in found or "_data_" not in found:
            return found
        transcoding = self._names[found["_type_"]]  # unknown: the library's way names it
        data = found["_data_"]
        if type(transcoding) is DatetimeAsISO and type(data) is str:
            return datetime.fromisoformat(data)
        return transcoding.decode(data)

    def _decoded(self, stored: StoredEvent) -> Any:
        """The event, or None where the library's own way is needed."""
        assert self._scan is not None
        try:
            text = stored.state.decode("utf8")
            state, end = self._scan(text, 0)
        except Exception:  # the library's way names what is wrong
            return None
        if end != len(text) or type(state) is not dict:
            return None
        origin = stored.originator_id
        origin_type: Any = type(origin)
        kind = self._kinds.get((stored.topic, origin_type))
        if kind is None:
            cls = resolve_topic(stored.topic)
            kind = self._kinds[(stored.topic, origin_type)] = (
                cls, find_id_convertor(cls, origin_type), getattr(cls, "class_version", 1))
        cls, convert, class_version = kind
        return event_from(cls, state, convert(origin), stored.originator_version,
                          class_version)


@dataclass(slots=True)
class Encoded:
    """An append's events as they will be stored, and each one's hash: "" where it is not
    sealed yet (its chain follows a stored event), or not sealed at all (`sealed` False).
    Sealing an event replaces its items of `stored` and `hashes`."""

    events: Sequence[Any]
    stored: list[StoredEvent]
    hashes: list[str]
    sealed: bool


class SealingEventStore(EventStore[str]):
    """The library's event store; every event it puts is sealed to its stream's chain.
    `sealing` False writes plain events (re-executing a recording made before sealing).
    Events of the `final` topics end their streams (nothing is ever chained to them, as an
    idempotent answer's record): their hashes are not noted."""

    def __init__(self, mapper: Mapper[str], recorder: Any, heads: Heads,
                 final: frozenset[str] = frozenset()) -> None:
        super().__init__(mapper, recorder)
        self.heads = heads
        self.final = final
        self.sealing = True

    def put(self, domain_events: Sequence[Any], **kwargs: Any) -> list[Recording[str]]:
        encoded = self.encode(domain_events)
        return self.recordings(encoded, self.insert(encoded, **kwargs))

    def encode(self, domain_events: Sequence[Any], *, ahead: bool = False) -> Encoded:
        """The events encoded; `ahead` of the write lock, also sealed where their chain
        starts in this append, all of it in turns with other threads (ledger.turns)."""
        to_stored = self.mapper.to_stored_event
        stored = ([to_stored(e) for e in domain_events] if len(domain_events) <= TURN
                  else [to_stored(e) for e in each_in_turns(domain_events)])
        encoded = Encoded(domain_events, stored, [""] * len(stored), sealed=self.sealing)
        if encoded.sealed and ahead:
            self._seal(encoded, ahead=True)
        return encoded

    def insert(self, encoded: Encoded, **kwargs: Any) -> Sequence[int]:
        """Seal what `encode` could not (the write lock held: the stored heads stay put),
        insert, and note the new heads once the insert is accepted; the events' positions
        in the log."""
        sealed = encoded.sealed
        if sealed and "" in encoded.hashes:
            self._seal(encoded, ahead=False)
        positions = self.recorder.insert_events(encoded.stored, **kwargs)
        if not positions:
            return []
        if sealed:
            stored, final = encoded.stored, self.final
            if len(stored) == 1:  # most appends: the one event is its stream's newest
                s = stored[0]
                if s.topic not in final:
                    self.heads.note(((str(s.originator_id), s.originator_version,
                                      encoded.hashes[0]),))
            else:
                self.heads.note(_last_of_each_stream(encoded, final))
        return positions

    @staticmethod
    def recordings(encoded: Encoded, positions: Sequence[int]) -> list[Recording[str]]:
        """The library's records of inserted events (an append that is its own transaction
        makes them after its commit: 4,002 objects for a 1,000-step plan)."""
        if not positions:
            return []
        return [_recording(event, s, position)
                for event, s, position in zip(encoded.events, encoded.stored, positions,
                                              strict=True)]

    def get(self, originator_id: str, *, gt: int | None = None, lte: int | None = None,
            desc: bool = False, limit: int | None = None) -> Iterator[Any]:
        stored = self.recorder.select_events(originator_id, gt=gt, lte=lte, desc=desc,
                                             limit=limit)
        # Of what was read, the newest sealed event is the stream's head to note (one noted
        # per event would be overtaken by the next); most reads find nothing new.
        for s in stored if desc else reversed(stored):
            if s.topic in self.final:
                continue
            digest = hash_of(s.state)
            if digest is not None:
                self.heads.note(((str(s.originator_id), s.originator_version, digest),))
                break
        return map(self.mapper.to_domain_event, stored)

    def _seal(self, encoded: Encoded, *, ahead: bool) -> None:
        """Seal each event not sealed yet onto the event before it: one of this append, or
        GENESIS for a first event, or (not `ahead`) the stream's stored head. `ahead` of the
        write lock, an event that follows a stored one is left as it is."""
        stored, hashes = encoded.stored, encoded.hashes
        batch: dict[str, tuple[int, str]] = {}  # chains within this one append
        # Ahead of the lock, in turns with other threads (ledger.turns); under it, at once.
        count = len(stored)
        for i in each_in_turns(range(count)) if ahead and count > TURN else range(count):
            s, digest = stored[i], hashes[i]
            stream, version = str(s.originator_id), s.originator_version
            if not digest:
                # What the event chains to: the event before it in this append, GENESIS
                # for a first event, or the stored head (not `ahead`: left unsealed).
                known = batch.get(stream)
                if known and known[0] == version - 1:
                    prev = known[1]
                elif version <= 1:
                    prev = GENESIS
                elif ahead:
                    continue
                else:
                    prev = self._prev(stream, version)
                state, digest = seal(prev, stream, version, s.topic, s.state)
                stored[i] = StoredEvent(s.originator_id, version, s.topic, state)
                hashes[i] = digest
            batch[stream] = (version, digest)

    def _prev(self, stream: str, version: int) -> str:
        """The hash of the stream's event before `version`; GENESIS for a first event, or
        when that event was written before sealing (verify names such events)."""
        if version <= 1:
            return GENESIS
        known = self.heads.get(stream, version - 1)
        if known is not None:
            return known
        found = self.recorder.select_events(stream, gt=version - 2, lte=version - 1, limit=1)
        digest = hash_of(found[0].state) if found else None
        return digest or GENESIS


def _recording(event: Any, s: StoredEvent, position: int) -> Recording[str]:
    """The library's record of an inserted event, made as the library makes domain events
    (its state set whole): its frozen dataclasses' constructors guard each field's write,
    the better part of an append's bookkeeping."""
    notification = _new(Notification)
    _set(notification, "__dict__", {
        "originator_id": s.originator_id, "originator_version": s.originator_version,
        "topic": s.topic, "state": s.state, "id": position})
    recording: Recording[str] = _new(Recording)
    _set(recording, "__dict__", {"domain_event": event, "notification": notification})
    return recording


_new = object.__new__
_set = object.__setattr__


def _last_of_each_stream(encoded: Encoded, final: frozenset[str],
                         ) -> list[tuple[str, int, str]]:
    """The newest (stream, version, hash) of each stream among sealed events, but for
    events of `final` topics: the only ones worth noting (a thousand-step plan notes its
    1,001 streams, not 2,001 events)."""
    last: dict[str, tuple[str, int, str]] = {}
    for s, digest in zip(encoded.stored, encoded.hashes, strict=True):
        if s.topic not in final:
            last[str(s.originator_id)] = (str(s.originator_id), s.originator_version, digest)
    return list(last.values())
