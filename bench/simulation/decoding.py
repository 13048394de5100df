"""Each stored event of a world decoded once, for all its processes and its checks.

Every process of a world folds the same log into its read model, and the reference model
folds it once more: without sharing, each event was decoded by each of them, again by every
process that restarted after a crash, and by each load of its stream into a process's
cache (9.7 decodings an event in all, an eighth of a run's instructions). Decoding is a
pure function of an event as stored, and events are immutable, so the first decoding is
kept and handed to every later reader of the same stored event. The first reader of each
event still decodes it with the product's own mapper, and a stored event whose bytes
differ from the kept one's is decoded afresh. The read model the full checks rebuild from
the log decodes every event itself (`decoding_afresh`), so the incremental read models,
folded from shared decodings, are compared with a fold of the mapper's own.
"""

import contextlib
from collections.abc import Iterator
from typing import Any

from eventsourcing.persistence import StoredEvent

from planledger.ledger.sealing import UnsealingMapper
from planledger.ledger.store import EventStore

# (stream, version, topic) -> (the event's stored bytes, the decoded event)
Decodings = dict[tuple[str, int, str], tuple[bytes, Any]]


class RememberingMapper(UnsealingMapper):
    """The store's mapper, sharing its decodings through `decodings` (one per world)."""

    decodings: Decodings | None = None

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        decodings = self.decodings
        if decodings is None:
            return super().to_domain_event(stored_event)
        key = (str(stored_event.originator_id), stored_event.originator_version,
               stored_event.topic)
        found = decodings.get(key)
        if found is not None and found[0] == stored_event.state:
            return found[1]
        event = super().to_domain_event(stored_event)
        decodings[key] = (stored_event.state, event)
        return event


@contextlib.contextmanager
def decoding_afresh(store: EventStore) -> Iterator[None]:
    """Inside the block, the store decodes each event it reads itself, sharing nothing."""
    mapper = store.mapper
    if not isinstance(mapper, RememberingMapper):
        yield
        return
    kept, mapper.decodings = mapper.decodings, None
    try:
        yield
    finally:
        mapper.decodings = kept
