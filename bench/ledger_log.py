"""Large, valid ledger logs, fast: events appended straight to the store in big batches.

Driving a million events through the `Ledger` would take most of an hour (each command
reads fresh state before it decides); the read side only reads the log, so benchmarks of
the read side write the same event types the ledger writes, with the versions, fences
and expiries it would give them, in batches of thousands per transaction.
"""

import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from planledger.bench.timing import OPERATOR
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId, plan_stream
from planledger.ledger.ports import Clock
from planledger.ledger.store import EventStore

START = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)
BATCH = 5_000


class StillClock(Clock):
    """A clock that says what it is told: the moment the benchmark asks about."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def now(self) -> datetime:
        return self.moment


class LogBuilder:
    """Appends plans, sessions, claims, heartbeats, completions and bounces."""

    def __init__(self, store: EventStore, step_ms: float = 1.0) -> None:
        self.store = store
        self.now = START
        self.count = 0
        self._step = timedelta(milliseconds=step_ms)
        self._versions: dict[str, int] = {}
        self._fences: dict[str, int] = {}
        self._pending: list[ev.LedgerEvent] = []
        self._ids = 0

    def _new_id(self, kind: str) -> str:
        self._ids += 1
        return f"{kind}{self._ids:09d}"

    def _emit(self, kind: type[ev.LedgerEvent], stream: str, session: str | None,
              **fields: Any) -> None:
        version = self._versions.get(stream, 0) + 1
        self._versions[stream] = version
        self.now += self._step
        self._pending.append(kind(stream, version, self.now, session,
                                  actor=session or OPERATOR, **fields))
        self.count += 1
        if len(self._pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self.store.append(self._pending)
            self._pending = []

    def plan(self, slug: str, depends_on: Sequence[Sequence[int]]) -> list[StepId]:
        """A plan whose step i waits on the steps at the given earlier indexes."""
        stream = plan_stream(PlanSlug(slug))
        self._emit(ev.PlanCreated, stream, None, slug=slug, title=slug, constraints={})
        steps: list[StepId] = []
        for i, deps in enumerate(depends_on):
            step = StepId(self._new_id("S"))
            self._emit(ev.StepAdded, stream, None, step_id=step, title=f"step {i}", body="",
                       depends_on=[steps[d] for d in deps])
            self._emit(ev.StepOpened, step, None, plan=slug)
            steps.append(step)
        return steps

    def session(self, name: str) -> SessionId:
        session = SessionId(self._new_id("A"))
        self._emit(ev.SessionStarted, session, session, name=name)
        return session

    def claim(self, step: StepId, session: SessionId, lease: int = 900) -> None:
        fence = self._fences.get(step, 0) + 1
        self._fences[step] = fence
        self._emit(ev.StepClaimed, step, session, fence=fence, lease_seconds=lease,
                   expires_at=self.now + timedelta(seconds=lease))

    def heartbeat(self, step: StepId, session: SessionId, lease: int = 900) -> None:
        self._emit(ev.LeaseRenewed, step, session, fence=self._fences[step],
                   lease_seconds=lease, expires_at=self.now + timedelta(seconds=lease))

    def complete(self, step: StepId, session: SessionId) -> None:
        self._emit(ev.StepCompleted, step, session, fence=self._fences[step])

    def release(self, step: StepId, session: SessionId) -> None:
        self._emit(ev.StepReleased, step, session, fence=self._fences[step], holder=session,
                   reason="released")

    def drop(self, step: StepId, session: SessionId) -> None:
        self._emit(ev.StepDropped, step, session, fence=self._fences[step])

    def bounce(self, step: StepId, session: SessionId, holder: SessionId) -> None:
        self._emit(ev.ClaimBounced, session, session, step_id=step, holder=holder,
                   holder_fence=self._fences[step], lease_seconds=900)


def layered_graph(steps: int, width: int, fan_in: int, seed: int = 1) -> list[list[int]]:
    """Steps in layers of `width`; each waits on `fan_in` random steps of the layer before
    it, so the graph is `steps / width` deep and work opens up layer by layer."""
    rng = random.Random(seed)
    graph: list[list[int]] = []
    for i in range(steps):
        layer_start = (i // width) * width
        previous = range(max(0, layer_start - width), layer_start)
        graph.append(sorted(rng.sample(previous, min(fan_in, len(previous)))))
    return graph
