"""Wake-ups for callers waiting on the log.

As the read model applies each event, this module works out which plan may now have a
claimable step, and says so.

While anyone watches (`watch`, `start`, ... `unwatch`), the read model applies every
append promptly. Appends by other processes and replicas arrive through a follower
(`projections.follower.follow`): LISTEN/NOTIFY on PostgreSQL, a short poll on SQLite.
Appends by this process arrive as soon as `poke` reports them, so an agent waiting here
wakes without a poll interval after another agent completes a step here. Each applied
event is checked for what it may change about a plan's claimable steps, and the result
goes to the `Signals`:

- `freed(plan, count)`: `count` steps of the plan may have become claimable (one opened,
  released, reopened or rejected in review; the dependents a completed, approved or
  dropped step no longer blocks); `EVERY_WAITER` when that step was the plan's last
  open one: every waiter answers "all done" now rather than at its deadline;
  plan `None`: of any plan (an event about a step the view does not hold, or one that
  reserved paths, which steps of any plan may collide with);
- `leased(plan, until)`: a lease of the plan (`None`: one that reserved paths) now ends at
  `until` (a claim or a heartbeat): a lapse writes nothing to the log, so a waiter times
  its wait to the next one (`next_lapse`).

Nothing here decides anything or knows who waits; `api.waiting` does. When nobody has
watched for `linger` seconds, the follower stops and the model stops signalling. So a
process that waited once does not poll for ever after.
"""

import logging
import sys
import threading
import time
from datetime import datetime
from typing import Protocol

from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.ledger.domain.state import SATISFYING, StepState
from planledger.projections import queries, reservations
from planledger.projections.follower import DEFAULT_INTERVAL, Follower, follow
from planledger.projections.readmodel import ReadModel
from planledger.projections.view import LedgerView

log = logging.getLogger(__name__)

LINGER_SECONDS = 30.0
EVERY_WAITER = sys.maxsize  # a `freed` count: the plan is finished, all its waiters answer
_FREEING = (ev.StepOpened, ev.StepReleased, ev.StepCompleted, ev.StepDropped,
            ev.StepReopened, ev.StepReviewed)
_LEASING = (ev.StepClaimed, ev.LeaseRenewed)


class Signals(Protocol):
    """Told, under the read model's lock, of each applied event that concerns waiters."""

    def freed(self, plan: PlanSlug | None, count: int) -> None: ...

    def leased(self, plan: PlanSlug | None, until: datetime) -> None: ...


def tell(signals: Signals, event: object, view: LedgerView) -> None:
    """Tell `signals` what `event`, just applied to `view`, may change. A step that
    reserved paths concerns every plan: a step anywhere may be passed by while it
    collides with that reservation."""
    if not isinstance(event, _FREEING + _LEASING + (ev.PathsReserved,)):
        return
    step_id = StepId(event.step_id if isinstance(event, ev.PathsReserved)
                     else event.originator_id)
    step = view.steps.get(step_id)
    plan = step.plan if step is not None and step_id not in view.reservations else None
    if step is not None and _finishes_its_plan(event, view, step):
        signals.freed(step.plan, EVERY_WAITER)
    # (A plan that retires as it finishes is told as any plan's, below: its first waiter
    # answers "all done", and each that answers hands the news to the next.)
    if isinstance(event, _LEASING):
        signals.leased(plan, event.expires_at)
    elif isinstance(event, ev.PathsReserved):
        if step is not None and step.expires_at is not None:
            signals.leased(None, step.expires_at)
    elif (count := _freed_by(event, view, step_id)) or plan is None:
        signals.freed(plan, max(count, 1))


def _finishes_its_plan(event: object, view: LedgerView, step: StepState) -> bool:
    """Whether the event closed the last open step of the step's plan."""
    index = view.indexes.get(step.plan)
    return _closing(event) and index is not None and index.unclosed == 0


def _closing(event: object) -> bool:
    approved = isinstance(event, ev.StepReviewed) and event.verdict == "approve"
    return approved or isinstance(event, ev.StepCompleted | ev.StepDropped)


def _freed_by(event: object, view: LedgerView, step_id: StepId) -> int:
    """How many steps the event may have made claimable: a completed or dropped step's
    dependents that wait on nothing else now; the step itself otherwise."""
    if not _closing(event):
        return 1  # the step itself (a rejected review opens it again)
    return sum(1 for d in view.dependents.get(step_id, ()) if _unblocked(view, d))


def _unblocked(view: LedgerView, step_id: StepId) -> bool:
    step, definition = view.steps.get(step_id), view.definition(step_id)
    return (step is not None and definition is not None and step.status == "open"
            and all(view.status_of(d) in SATISFYING for d in definition.waits_on))


def next_lapse(reads: ReadModel, plan: PlanSlug, after: datetime) -> datetime | None:
    """When, after `after`, the clock alone may make a step of the plan claimable (nothing
    is appended then): its next lease lapse, or the end of a live path reservation
    anywhere (a step of the plan may collide with it). None: neither will happen. Ask
    with the moment a try began: a lease that lapsed while it ran is still to be tried."""
    with reads.reading(after) as (view, _):
        lapse = queries.next_lapse(view, plan, after)
        held = reservations.live(view, after) if view.reservations else []
    ends = [h.expires_at for h in held if h.expires_at > after]
    return min([*ends, lapse] if lapse is not None else ends, default=None)


class Wakeups:
    """`Wakeups(reads, signals)`: keeps `reads` current while watched, telling `signals`."""

    def __init__(self, reads: ReadModel, signals: Signals, *,
                 interval: float = DEFAULT_INTERVAL, linger: float = LINGER_SECONDS) -> None:
        self._reads, self._signals = reads, signals
        self._interval, self._linger = interval, linger
        self._lock = threading.Lock()
        self._watchers = 0
        self._idle_since = time.monotonic()
        self._poked = threading.Event()
        self._pump: threading.Thread | None = None
        self._follower: Follower | None = None
        self._stopping_set = False

    def watch(self) -> bool:
        """Count one more caller waiting; True when every append reaches `signals`
        already, False when `start` must be called first."""
        with self._lock:
            self._watchers += 1
            return self._pump is not None

    def start(self) -> None:
        """From now on every append reaches `signals` (nothing to do once started). Blocks
        while the follower starts: it catches the model up first."""
        with self._lock:
            if self._pump is not None:
                return
            if not self._stopping_set:
                self._reads.stop_with_me(self.close)  # before the store closes under it
                self._stopping_set = True
            self._reads.listen(self._told)
            self._follower = follow(self._reads, self._interval)
            self._pump = threading.Thread(target=self._run, name="wakeups", daemon=True)
            self._pump.start()

    def unwatch(self) -> None:
        with self._lock:
            self._watchers -= 1
            if self._watchers == 0:
                self._idle_since = time.monotonic()

    def poke(self) -> None:
        """This process appended: apply it now (when anyone watches), not at the next poll."""
        if self._pump is not None:
            self._poked.set()

    def close(self) -> None:
        """Stop following and telling now, whoever still watches."""
        with self._lock:
            pump = self._pump
            follower = self._stop()
        self._poked.set()
        if follower is not None:
            follower.stop()
        if pump is not None and pump is not threading.current_thread():
            pump.join(10)

    def _told(self, position: int, event: object, before: StepState | None) -> None:
        tell(self._signals, event, self._reads.view)

    def _run(self) -> None:
        """Apply this process's appends when poked, until closed or idle for `linger`."""
        while self._poked_or_idle():
            try:
                self._reads.catch_up()
            except Exception:  # a locked or closing store: the follower goes on
                log.warning("applying this process's appends failed", exc_info=True)

    def _poked_or_idle(self) -> bool:
        """Wait for a poke (True); False once closed, or nobody watched for `linger` (then
        this stops the follower)."""
        me = threading.current_thread()
        while True:
            poked = self._poked.wait(self._linger)
            self._poked.clear()
            with self._lock:
                if self._pump is not me:
                    return False  # closed (or replaced after an idle stop)
                idle = self._watchers == 0 and (
                    time.monotonic() - self._idle_since >= self._linger)
                follower = self._stop() if idle and not poked else None
            if follower is not None:
                follower.stop()
                return False
            if poked:
                return True

    def _stop(self) -> Follower | None:
        """Under the lock: stop telling; returns the follower to stop outside it."""
        if self._pump is not None:
            self._reads.unlisten(self._told)
        follower, self._follower, self._pump = self._follower, None, None
        return follower
