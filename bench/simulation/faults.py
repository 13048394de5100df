"""Faults at the store boundary: the real event store, subclassed, told what to break.

The world arms one fault before an action (`FaultPlan.arm`); the first append of that
action meets it:
- `conflict`: the append fails as an optimistic-concurrency conflict, as when another
  writer took the stream's next version (only where one could: a stream already begun);
- `fail`: the commit fails and nothing is written (a crash before commit, a full disk);
- `lost_ack`: the commit holds but its acknowledgement never arrives (the connection
  drops after COMMIT): the caller sees a store error for a write that is in the log.
Besides, the store can refuse every write for a while (`refuse_until`), as a database
held down does. Failures are the library's `OperationalError`, which callers answer as
503 (store unavailable), exactly as a real outage's.
"""

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from eventsourcing.persistence import (
    ApplicationRecorder,
    InfrastructureFactory,
    Mapper,
    OperationalError,
    Recording,
)

from planledger.bench.simulation.decoding import Decodings, RememberingMapper
from planledger.ledger.answers import Answer
from planledger.ledger.ports import Clock
from planledger.ledger.store import ConflictError, EventStore, Fact

Fault = Literal["conflict", "fail", "lost_ack"]
FAULTS: tuple[Fault, ...] = ("conflict", "fail", "lost_ack")


class StoreRefused(OperationalError):
    """A write the simulated store refused (or whose acknowledgement it lost)."""


@dataclass
class FaultPlan:
    """What the store breaks next, shared by every process of a world; `fired` tells the
    world which faults its last action met."""

    clock: Clock
    armed: Fault | None = None
    conflicts_left: int = 0
    refuse_until: datetime | None = None
    fired: tuple[str, ...] = ()
    counts: Counter[str] = field(default_factory=Counter)  # every fault met, by kind

    def arm(self, fault: Fault | None, conflicts: int = 1) -> None:
        self.armed, self.conflicts_left, self.fired = fault, conflicts, ()

    def refusing(self) -> bool:
        return self.refuse_until is not None and self.clock.now() < self.refuse_until

    def _fire(self, what: str) -> None:
        self.fired = (*self.fired, what)
        self.counts[what] += 1


class FaultyEventStore(EventStore):
    """The real event store (sealing, caches, snapshots), whose appends meet the world's
    faults. Given `recorder`, it shares another store's log: a second process on the same
    database (the in-memory store has no file to open twice). Given `decodings`, it shares
    its decoded events with the world's other stores (simulation.decoding)."""

    def __init__(self, settings: dict[str, str], persistence: type[InfrastructureFactory[Any]],
                 faults: FaultPlan, recorder: ApplicationRecorder | None = None, *,
                 decodings: Decodings | None = None) -> None:
        # Read by construct_recorder and construct_mapper, during super().__init__
        self._shared_recorder = recorder
        self._decodings = decodings
        self.faults = faults
        self._depth = 0
        self._lose_ack = False
        super().__init__(settings, persistence)

    def construct_recorder(self) -> ApplicationRecorder:
        if self._shared_recorder is not None:
            return self._shared_recorder
        return super().construct_recorder()

    def construct_mapper(self) -> Mapper[str]:
        mapper = self.factory.mapper(transcoder=self.construct_transcoder(),
                                     mapper_class=RememberingMapper)
        assert isinstance(mapper, RememberingMapper)
        mapper.decodings = self._decodings
        return mapper

    def transaction(self) -> contextlib._GeneratorContextManager[None]:
        # Only a lost acknowledgement needs a hand in the transaction (it fails the call
        # after the commit): every other one is the real store's own, at no extra cost
        if self.faults.armed == "lost_ack" and not self._depth:
            return self._losing_ack()
        return super().transaction()

    @contextlib.contextmanager
    def _losing_ack(self) -> Iterator[None]:
        self._depth, self._lose_ack = 1, False
        try:
            with super().transaction():
                yield
        finally:
            self._depth = 0
        if self._lose_ack:  # committed: only the answer goes missing
            self._lose_ack = False
            raise StoreRefused("the store's acknowledgement of a commit was lost")

    def append(self, events: Sequence[Fact | Answer]) -> list[Recording[str]]:
        plan = self.faults
        fault = plan.armed
        if not events or (fault is None and not plan.refusing()):
            return super().append(events)
        if fault == "lost_ack" and not self._depth:
            with self.transaction():
                return self.append(events)
        if plan.refusing():
            plan._fire("refused")
            raise StoreRefused("the store refuses writes (simulated outage)")
        if fault == "conflict" and any(getattr(e, "originator_version", 0) > 1 for e in events):
            plan.conflicts_left -= 1
            if plan.conflicts_left <= 0:
                plan.armed = None
            plan._fire("conflict")
            raise ConflictError("simulated: another writer took the stream's next version")
        if fault == "fail":
            plan.armed = None
            plan._fire("fail")
            raise StoreRefused("the store failed to commit (simulated)")
        recordings = super().append(events)
        if fault == "lost_ack":
            plan.armed = None
            plan._fire("lost_ack")
            self._lose_ack = True
        return recordings

    def shared_recorder(self) -> Any:
        """The log itself, for another process of the same world to open."""
        return self.recorder
