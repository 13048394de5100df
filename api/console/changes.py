"""What a page of the log changed, for the console's live stream: the steps its events
touched (and the steps whose dependencies they finished), those steps' plans' progress,
and the sessions concerned, each as it stands now.

Every open console used to read the whole snapshot again on each change; a change now
costs what it touched, and is built once for every console waiting at the same position
(`SharedChanges`), not once per console.
"""

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from anyio import to_thread

from planledger.api import reads
from planledger.api.console.schemas import ChangeOut
from planledger.api.console.snapshot import live_sessions, names
from planledger.api.console.steps import steps_now
from planledger.api.runtime import Runtime
from planledger.api.schemas import EventOut, PlanSummaryOut, ProgressOut
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PLAN_STREAM_PREFIX, PlanSlug, SessionId, StepId
from planledger.projections import queries
from planledger.projections.view import LedgerView

MAX_STEPS = 100  # steps sent one by one; a wider change names its plans to read again
# Events after which a step's dependents may be judged differently.
FINISHING = frozenset(t.__name__ for t in (ev.StepCompleted, ev.StepDropped, ev.StepReopened,
                                          ev.StepReviewed))
KEEP_SECONDS = 2.0  # a change built for one console serves others this long
KEEP = 8  # changes kept at once (one per position consoles wait at)
# A message's most bytes: a longer page is cut short (its `more` says so) and the rest
# follows in the next messages; one event over it is still sent, alone.
MESSAGE_BYTES = 256 * 1024


@dataclass
class Touched:
    """What a page of events concerns, by id."""

    steps: dict[StepId, None] = field(default_factory=dict)  # in order, without repeats
    plans: dict[PlanSlug, None] = field(default_factory=dict)
    new_plans: dict[PlanSlug, None] = field(default_factory=dict)
    sessions: dict[SessionId, None] = field(default_factory=dict)


@dataclass(frozen=True)
class Message:
    """A change and its JSON, serialised once for every console it is sent to."""

    change: ChangeOut
    text: str


def message_after(runtime: Runtime, after: int, limit: int,
                  max_bytes: int = MESSAGE_BYTES) -> Message:
    """The change after position `after`, ready to send: at most `limit` events, fewer
    where that many would make more than `max_bytes` of JSON (at least one)."""
    while True:
        change = change_after(runtime, after, limit)
        text = change.model_dump_json()
        size = len(text.encode())
        if size <= max_bytes or len(change.events) <= 1:
            return Message(change, text)
        # Events differ in size: guess from the average, and halve at least.
        limit = max(1, min(len(change.events) // 2, len(change.events) * max_bytes // size))


def change_after(runtime: Runtime, after: int, limit: int) -> ChangeOut:
    """The log after position `after` (at most `limit` events) and what it changed."""
    page = reads.log_page(runtime, after, limit)
    with runtime.reads.reading() as (view, moment):  # at or past the page's last event
        touched = _touched(view, page.events)
        for step_id in [s for s in touched.steps if view.steps[s].plan in touched.new_plans]:
            del touched.steps[step_id]  # a new plan is read whole by its first page
        wide = len(touched.steps) > MAX_STEPS
        steps = [] if wide else steps_now(view, touched.steps, moment)
        for step in steps:
            touched.plans[PlanSlug(step.plan)] = None
            touched.sessions.update((SessionId(w), None) for w in (step.holder,
                                    step.lapsed_holder) if w is not None)
        plans = list({**touched.plans, **touched.new_plans})
        stale: list[str] = [*touched.new_plans, *(p for p in touched.plans if wide
                                                   and p not in touched.new_plans)]
        progress = {p: (queries.progress(view, p, moment))
                    for p in plans if p in view.indexes}
        summaries = [_summary(view, p, progress[p]) for p in plans if p in progress]
        live = len(live_sessions(view))
        sessions = [s for s in touched.sessions if s in view.sessions]
    cards = [reads.session(runtime, s) for s in sessions]
    named = {*sessions, *(w for s in steps for w in (s.holder, s.lapsed_holder) if w)}
    return ChangeOut(**dict(page), now=moment, steps=steps, plans=summaries,
                     stale_plans=stale, sessions=cards,
                     live_sessions=live, names=names(runtime, named))


def _summary(view: LedgerView, slug: PlanSlug, progress: ProgressOut) -> PlanSummaryOut:
    plan = view.plans[slug]
    return PlanSummaryOut(slug=plan.slug, title=plan.title, created_at=plan.created_at,
                          progress=progress)


def _touched(view: LedgerView, events: list[EventOut]) -> Touched:
    touched = Touched()
    for event in events:
        data = event.data
        if event.type == ev.PlanCreated.__name__:
            touched.new_plans[PlanSlug(str(data["slug"]))] = None
        elif event.stream.startswith(PLAN_STREAM_PREFIX):
            touched.plans[PlanSlug(event.stream.removeprefix(PLAN_STREAM_PREFIX))] = None
        step_id = StepId(str(data.get("step_id") or event.stream))
        if step_id in view.steps:
            touched.steps[step_id] = None
            if event.type in FINISHING:
                touched.steps.update(dict.fromkeys(sorted(view.dependents.get(step_id, ()))))
        for who in (event.session_id, data.get("holder")):
            if isinstance(who, str):
                touched.sessions[SessionId(who)] = None
        if event.stream in view.sessions:
            touched.sessions[SessionId(event.stream)] = None
    return touched


@dataclass
class _Built:
    at: float
    change: "asyncio.Task[Message]"


class SharedChanges:
    """Changes after a position, built once and handed to every stream that asks for the
    same position within KEEP_SECONDS (consoles that are up to date all wait at the log's
    end, so one append is described once, not once per console). A build runs as a task of
    its own: a console that goes away while waiting does not cancel it for the others."""

    def __init__(self, build: Callable[[int], Message]) -> None:
        self._build = build
        self._kept: OrderedDict[int, _Built] = OrderedDict()

    async def after(self, position: int) -> Message:
        kept = self._kept.get(position)
        if kept is None or time.monotonic() - kept.at > KEEP_SECONDS:
            task = asyncio.get_running_loop().create_task(
                to_thread.run_sync(self._build, position))
            task.add_done_callback(lambda done: self._forget_failed(position, done))
            kept = self._kept[position] = _Built(time.monotonic(), task)
            self._kept.move_to_end(position)
            while len(self._kept) > KEEP:
                self._kept.popitem(last=False)
        return await asyncio.shield(kept.change)

    def _forget_failed(self, position: int, done: "asyncio.Task[Message]") -> None:
        """A failed build is not handed out again: the next stream to ask builds anew."""
        if done.cancelled() or done.exception() is not None:
            kept = self._kept.get(position)
            if kept is not None and kept.change is done:
                del self._kept[position]
