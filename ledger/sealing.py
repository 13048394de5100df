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

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from eventsourcing.persistence import (
    EventStore,
    Mapper,
    Notification,
    Recording,
    StoredEvent,
)

from planledger.ledger.chain import GENESIS, HASH_KEY, PREV_KEY, hash_of, seal
from planledger.ledger.turns import each_in_turns

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

    def get(self, stream: str, version: int) -> str | None:
        with self._lock:
            known = self._heads.get(stream)
        return known[1] if known is not None and known[0] == version else None


class UnsealingMapper(Mapper[str]):
    """The library's mapper; events read back lose their chain keys."""

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        event = super().to_domain_event(stored_event)
        state = vars(event)
        state.pop(HASH_KEY, None)
        state.pop(PREV_KEY, None)
        return event


@dataclass(frozen=True)
class Encoded:
    """An append's events as they will be stored, each with its hash: "" where it is not
    sealed yet (its chain follows a stored event), or not sealed at all (`sealed` False)."""

    events: Sequence[Any]
    stored: Sequence[tuple[StoredEvent, str]]
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
        return self.put_encoded(self.encode(domain_events), **kwargs)

    def encode(self, domain_events: Sequence[Any]) -> Encoded:
        """The events encoded, and sealed where their chain starts in this append: all of
        it work that may run before the write lock is taken."""
        stored = [(self.mapper.to_stored_event(e), "") for e in each_in_turns(domain_events)]
        if not self.sealing:
            return Encoded(domain_events, stored, sealed=False)
        return Encoded(domain_events, self._seal(stored, ahead=True), sealed=True)

    def put_encoded(self, encoded: Encoded, **kwargs: Any) -> list[Recording[str]]:
        """Seal what `encode` could not (the write lock held: the stored heads stay put),
        insert, and note the new heads once the insert is accepted."""
        sealed = self._seal(encoded.stored, ahead=False) if encoded.sealed else encoded.stored
        ids = self.recorder.insert_events([s for s, _ in sealed], **kwargs)
        if not ids:
            return []
        if encoded.sealed:
            self.heads.note(_last_of_each_stream(s for s in sealed
                                                 if s[0].topic not in self.final))
        return [Recording(event, Notification(
                    originator_id=s.originator_id, originator_version=s.originator_version,
                    topic=s.topic, state=s.state, id=n_id))
                for event, (s, _), n_id in zip(encoded.events, sealed, ids, strict=True)]

    def get(self, originator_id: str, *, gt: int | None = None, lte: int | None = None,
            desc: bool = False, limit: int | None = None) -> Iterator[Any]:
        stored = self.recorder.select_events(originator_id, gt=gt, lte=lte, desc=desc,
                                             limit=limit)
        self.heads.note((str(s.originator_id), s.originator_version, digest)
                        for s in stored if s.topic not in self.final
                        and (digest := hash_of(s.state)) is not None)
        return map(self.mapper.to_domain_event, stored)

    def _seal(self, stored: Sequence[tuple[StoredEvent, str]], *, ahead: bool,
              ) -> list[tuple[StoredEvent, str]]:
        """Seal each event not sealed yet onto the event before it: one of this append, or
        GENESIS for a first event, or (not `ahead`) the stream's stored head. `ahead` of the
        write lock, an event that follows a stored one is left as it is."""
        batch: dict[str, tuple[int, str]] = {}  # chains within this one append
        sealed = []
        # Ahead of the lock, in turns with other threads (ledger.turns); under it, at once.
        for s, known_digest in each_in_turns(stored) if ahead else stored:
            stream, version = str(s.originator_id), s.originator_version
            digest, event = known_digest, s
            prev = None if digest else self._chained_to(batch, stream, version, ahead=ahead)
            if prev is not None:
                state, digest = seal(prev, stream, version, s.topic, s.state)
                event = StoredEvent(s.originator_id, version, s.topic, state)
            if digest:
                batch[stream] = (version, digest)
            sealed.append((event, digest))
        return sealed

    def _chained_to(self, batch: dict[str, tuple[int, str]], stream: str, version: int, *,
                    ahead: bool) -> str | None:
        """The hash the event at `version` chains to, or None to leave it unsealed."""
        known = batch.get(stream)
        if known and known[0] == version - 1:
            return known[1]
        if version <= 1:
            return GENESIS
        return None if ahead else self._prev(stream, version)

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


def _last_of_each_stream(sealed: Iterable[tuple[StoredEvent, str]],
                         ) -> list[tuple[str, int, str]]:
    """The newest (stream, version, hash) of each stream among sealed events: the only
    ones worth noting (a thousand-step plan notes its 1,001 streams, not 2,001 events)."""
    last: dict[str, tuple[str, int, str]] = {}
    for s, digest in sealed:
        last[str(s.originator_id)] = (str(s.originator_id), s.originator_version, digest)
    return list(last.values())
