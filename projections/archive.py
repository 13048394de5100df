"""Retired plans, read back from the log on demand.

The live view retires a finished plan once enough other plans have finished after it
(see `projections.view`). It then keeps only what the plan lists need, plus the log
positions of the plan's events.

`LogArchive` reads those events back for the view. It also lets the store drop the
plan's streams from its caches when the plan retires.

`RetiredPlans` answers questions about a retired plan's steps, history or timeline. It
folds a view of that one plan from its events, which gives the same detail the live view
held before. It keeps the last few such views, because a person who opens a plan usually
reads it several times.
"""

import threading
from collections import OrderedDict
from collections.abc import Sequence

from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.ledger.domain.state import PlanState
from planledger.ledger.notification_log import LogSource
from planledger.projections.log import Positioned, at_positions, paused_gc
from planledger.projections.view import FinishedPlan, LedgerView

DETAILS_KEPT = 4


class LogArchive:
    """The store's log as a view's archive (see `projections.view.Archive`)."""

    def __init__(self, store: LogSource) -> None:
        self.store = store

    def events_at(self, positions: Sequence[int]) -> list[Positioned]:
        return at_positions(self.store, positions)

    def plan_of(self, step_id: StepId) -> PlanSlug | None:
        return self.store.plan_of_step(step_id)

    def retired(self, plan: PlanState) -> None:
        self.store.forget([plan.id, *plan.steps])


class RetiredPlans:
    """Retired plans' detail, folded back from the log when asked for."""

    def __init__(self, store: LogSource, kept: int = DETAILS_KEPT) -> None:
        self.store, self.kept = store, kept
        self._views: OrderedDict[PlanSlug, tuple[FinishedPlan, LedgerView]] = OrderedDict()
        self._lock = threading.Lock()

    def detail(self, view: LedgerView, plan: PlanSlug) -> LedgerView:
        """`view` itself when it holds the plan's detail (or knows no such plan); for a plan
        retired from it, a view holding that plan alone, as `view` held it."""
        finished = view.finished.get(plan)
        if finished is None:
            return view
        with self._lock:
            kept = self._views.get(plan)
            if kept is not None and kept[0] is finished:  # brought back since: not it
                self._views.move_to_end(plan)
                return kept[1]
        detail = LedgerView()
        with paused_gc():  # as the read model's fold (projections.log)
            detail.fold_past(at_positions(self.store, finished.positions))
        with self._lock:
            self._views[plan] = (finished, detail)
            self._views.move_to_end(plan)
            while len(self._views) > self.kept:
                self._views.popitem(last=False)
        return detail
