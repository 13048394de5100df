"""The hash chain (see ledger.chain) wired into the `eventsourcing` library's event store.

`SealingEventStore.put` seals each stored event with the hash of the one before it in its
stream, in the same insert as the events: a conflicting append (another writer took the
version) fails as a whole, so a sealed chain never forks. It notes the hashes it reads
from and writes to the store, so an append (which always follows a read of its streams)
rarely has to read the previous hash again. `UnsealingMapper` takes the chain keys off
events read back, so domain events never see them. Snapshots live beside the log and are
never sealed.
"""

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from eventsourcing.persistence import (
    EventStore,
    Mapper,
    Notification,
    Recording,
    StoredEvent,
)

from planledger.ledger.chain import GENESIS, HASH_KEY, PREV_KEY, hash_of, seal

HEADS_KEPT = 50_000


class Heads:
    """The latest known hash of recently used streams: (version, hash) per stream. Only
    hashes read from the store or of events it accepted are noted: a stored event never
    changes, so a noted (stream, version) hash stays true."""

    def __init__(self, size: int = HEADS_KEPT) -> None:
        self._heads: OrderedDict[str, tuple[int, str]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def note(self, stream: str, version: int, digest: str) -> None:
        with self._lock:
            known = self._heads.get(stream)
            if known is None or known[0] < version:
                self._heads[stream] = (version, digest)
                self._heads.move_to_end(stream)
                if len(self._heads) > self._size:
                    self._heads.popitem(last=False)

    def forget(self, streams: Iterable[str]) -> None:
        """Drop what is noted of these streams (hashes of events that were rolled back)."""
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


class SealingEventStore(EventStore[str]):
    """The library's event store; every event it puts is sealed to its stream's chain.
    `sealing` False writes plain events (re-executing a recording made before sealing)."""

    def __init__(self, mapper: Mapper[str], recorder: Any, heads: Heads) -> None:
        super().__init__(mapper, recorder)
        self.heads = heads
        self.sealing = True

    def put(self, domain_events: Sequence[Any], **kwargs: Any) -> list[Recording[str]]:
        stored = [self.mapper.to_stored_event(e) for e in domain_events]
        sealed = self._seal(stored) if self.sealing else [(s, "") for s in stored]
        ids = self.recorder.insert_events([s for s, _ in sealed], **kwargs)
        if not ids:
            return []
        recordings = []
        for event, (s, digest), n_id in zip(domain_events, sealed, ids, strict=True):
            if digest:
                self.heads.note(str(s.originator_id), s.originator_version, digest)
            recordings.append(Recording(event, Notification(
                originator_id=s.originator_id, originator_version=s.originator_version,
                topic=s.topic, state=s.state, id=n_id)))
        return recordings

    def get(self, originator_id: str, *, gt: int | None = None, lte: int | None = None,
            desc: bool = False, limit: int | None = None) -> Iterator[Any]:
        stored = self.recorder.select_events(originator_id, gt=gt, lte=lte, desc=desc,
                                             limit=limit)
        for s in stored:
            if (digest := hash_of(s.state)) is not None:
                self.heads.note(str(s.originator_id), s.originator_version, digest)
        return map(self.mapper.to_domain_event, stored)

    def _seal(self, stored: Sequence[StoredEvent]) -> list[tuple[StoredEvent, str]]:
        batch: dict[str, tuple[int, str]] = {}  # chains within this one append
        sealed = []
        for s in stored:
            stream, version = str(s.originator_id), s.originator_version
            known = batch.get(stream)
            prev = known[1] if known and known[0] == version - 1 else self._prev(stream, version)
            state, digest = seal(prev, stream, version, s.topic, s.state)
            batch[stream] = (version, digest)
            sealed.append((StoredEvent(s.originator_id, version, s.topic, state), digest))
        return sealed

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
