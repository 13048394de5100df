"""Auditors' read models: a step's history, and everything as of a past time or position.

A step's history is every event about it, in log order: its own stream (opened, claimed,
heartbeats, released, completed, dropped, reopened), the plan events that define it
(added, revised, dependencies declared) and the refused attempts on it (bounces naming
the holder, blocked or closed claims, stale fences). The live view keeps only their log
positions; the events themselves are read back from the log when asked for.

"As of" folds a fresh view from the start of the log, with the same fold as the live
model, up to a position, or up to the last event stamped at or before a time (the log's
order is the truth: the fold stops at the first event stamped later). It costs a read of
the log up to that point: a question for auditors, not for hot paths.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime

from planledger.ledger.domain.events import LedgerEvent
from planledger.ledger.domain.ids import StepId
from planledger.ledger.notification_log import LogSource
from planledger.projections.log import PAGE, Positioned, at_positions, pages, paused_gc
from planledger.projections.queryable import Queryable
from planledger.projections.results import HistoryEntry
from planledger.projections.view import TIMELESS, LedgerView


def step_history(
    store: LogSource, positions: Sequence[int], upto: int | None = None
) -> list[HistoryEntry]:
    """The events at `positions` (a step's, from the view), up to position `upto`."""
    wanted = [p for p in positions if upto is None or p <= upto]
    return [HistoryEntry(position, event) for position, event in at_positions(store, wanted)
            if isinstance(event, LedgerEvent)]


class AsOf(Queryable):
    """The read models as they stood at `position`; leases are judged at `moment`."""

    def __init__(self, store: LogSource, view: LedgerView, moment: datetime) -> None:
        self.store = store
        self.view = view
        self.moment = moment

    @property
    def position(self) -> int:
        return self.view.position

    @contextmanager
    def reading(self, now: datetime | None = None) -> Iterator[tuple[LedgerView, datetime]]:
        yield self.view, now or self.moment

    def history(self, step_id: str) -> list[HistoryEntry]:
        """The step's events up to this point."""
        positions = self.view.history.get(StepId(step_id))
        return step_history(self.store, positions or (), self.position)


def as_of(
    store: LogSource, position: int | None = None, time: datetime | None = None,
    page: int = PAGE,
) -> AsOf:
    """The read models after the event at `position` (or the last event at or before
    `time`); with both, whichever comes first. Leases are judged at `time` when given,
    else at the time of the last event folded."""
    view = LedgerView()
    for batch in pages(store, 0, page, stop=position):
        kept = _until(batch, time)
        with paused_gc():
            view.apply_all(kept)
        if len(kept) < len(batch):
            break
    return AsOf(store, view, time or view.last_time or TIMELESS)


def _until(batch: list[Positioned], time: datetime | None) -> list[Positioned]:
    if time is None:
        return batch
    for i, (_, event) in enumerate(batch):
        stamp = getattr(event, "timestamp", None)
        if stamp is not None and stamp > time:
            return batch[:i]
    return batch
