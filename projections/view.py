"""The read side's state: the log folded into plans, steps and sessions, plus indexes.

`LedgerView` folds with the domain's own `evolve_*` functions, so a step here is exactly
the step the write side loads. Beside the states it keeps what makes queries cheap:
per plan a `PlanIndex` (ready, blocked, in progress), the dependents of every step, the
steps each session holds, and the log positions of every event about each step.

It has no store, no lock and no clock: `ReadModel` feeds it from the log, `as_of` folds a
fresh one up to a point. Events are applied a batch at a time: `apply` folds the states
and notes which steps need judging again; `settle` judges them, once each, so a page of
a rebuild costs one verdict per touched step however many events touched it.

Given an `Archive` (the live read model's: the log), the view holds open work, not all
of history: once `kept` more plans have finished after it, a finished plan (every step
done or dropped) retires. Its steps, definitions, index and positions leave the tables;
what lists and counts it stays (`FinishedPlan`), with the log positions its detail is
folded back from when someone asks for it (`fold_past`). An event about a retired plan (a
step reopened or added, a refused claim on one of its steps) brings it back first. When
a plan retires depends only on the log, so two views of the same log hold the same.
"""

from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain
from typing import TYPE_CHECKING, Any, Protocol, get_type_hints

from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.access import KeyState, evolve_key
from planledger.ledger.domain.claims import Verdict, assess
from planledger.ledger.domain.ids import PLAN_STREAM_PREFIX, PlanSlug, SessionId, StepId
from planledger.ledger.domain.reservations import Reservation, note_reserved
from planledger.ledger.domain.state import (
    SATISFYING,
    PlanState,
    SessionState,
    StepDef,
    StepState,
    evolve_plan,
    evolve_session,
    evolve_step,
)
from planledger.projections.index import PlanIndex

# An open step's verdict does not depend on the time (only a held lease does), so the
# index judges open steps once, when they or their dependencies change, at any moment.
TIMELESS = datetime.min.replace(tzinfo=UTC)
# Log positions, as 64-bit ints. `array` takes a type argument only from Python 3.12 on,
# and the checkpoint reads these annotations at run time: there it is the bare class.
if TYPE_CHECKING:
    Positions = array[int]
else:
    Positions = array

# Finished plans whose detail stays (the last to finish): whoever watched a plan finish
# (a console, its agents) reads it once more without folding it back from the log.
FINISHED_KEPT = 16

_PLAN_EVENTS = (ev.PlanCreated, ev.StepAdded, ev.StepRevised, ev.DependenciesDeclared,
                ev.PathsDeclared)
_STEP_EVENTS = ev.STEP_STREAM_EVENTS
_SESSION_EVENTS = (ev.SessionStarted, ev.SessionEnded, ev.ClaimBounced, ev.ClaimRefused,
                   ev.StaleFenceRejected, ev.ReadyListed, ev.PathsBounced, ev.ReviewRefused)


@dataclass(frozen=True)
class KeyIndex:
    """Every issued key by its digest and by its name, and whether any is live."""

    by_digest: dict[str, KeyState]
    by_name: dict[str, KeyState]
    any_live: bool


@dataclass(frozen=True)
class FinishedPlan:
    """A retired plan: what lists and counts it, and the ascending log positions of the
    events its detail is folded back from (its own stream's, its steps', and the refusals
    and ready listings naming them)."""

    slug: PlanSlug
    title: str
    created_at: datetime
    total: int
    done: int
    dropped: int
    positions: Positions


class Archive(Protocol):
    """Where a view's retired plans are read back from: the log."""

    def events_at(self, positions: Sequence[int]) -> Iterable[tuple[int, object]]:
        """The events at these ascending log positions, with their positions."""

    def plan_of(self, step_id: StepId) -> PlanSlug | None:
        """The plan of a step the view no longer holds (None: no such step)."""

    def retired(self, plan: PlanState) -> None:
        """The plan's detail has left the view (what else keeps it may let it go too)."""


class LedgerView:
    """Plans, steps and sessions as of `position`, with the indexes queries need.

    The attributes annotated here are the view's whole state, and what a checkpoint saves
    (`projections.resume`, by these annotations); the rest is rebuilt on restore."""

    position: int
    last_time: datetime | None
    plans: dict[PlanSlug, PlanState]
    steps: dict[StepId, StepState]
    sessions: dict[SessionId, SessionState]
    indexes: dict[PlanSlug, PlanIndex]
    dependents: dict[StepId, set[StepId]]
    held: dict[SessionId, set[StepId]]
    ended_holders: set[SessionId]  # ended, still named as holders
    history: dict[StepId, Positions]
    # Positions of the events about a plan but no step (PlanCreated, ReadyListed), and
    # of every session's start and end: with `history`, where a plan's timeline is.
    plan_marks: dict[PlanSlug, Positions]
    session_marks: Positions
    finished: dict[PlanSlug, FinishedPlan]  # retired: their detail is in the log only
    finishing: list[PlanSlug]  # finished and still held, the first to finish first
    # Each step's latest path reservation (ledger.domain.reservations), live or not: one
    # is live while its claim is (same fence, lease, holder), judged at query time.
    reservations: dict[StepId, Reservation]
    # Every key name ever issued, live or revoked (ledger.domain.access).
    keys: dict[str, KeyState]
    # Every step key (ledger.domain.references) and the plans with a step of that key:
    # kept when a plan retires, so a bare key finds a finished plan's step too.
    step_keys: dict[str, set[PlanSlug]]

    def __init__(self, archive: Archive | None = None, kept: int = FINISHED_KEPT) -> None:
        """A view that retires finished plans given an `archive` to read them back from
        (`kept`, at least 1: how many finished plans stay held); without one it keeps
        everything."""
        assert kept >= 1, "a plan brought back must stay until its event is applied"
        self.position = 0
        self.last_time = None
        self.plans = {}
        self.steps = {}
        self.sessions = {}
        self.indexes = {}
        self.dependents = {}
        self.held = {}
        self.ended_holders = set()
        self.history = {}
        self.plan_marks = {}
        self.session_marks = array("q")
        self.finished = {}
        self.finishing = []
        self.reservations = {}
        self.keys = {}
        self.step_keys = {}
        self._key_index: KeyIndex | None = None  # derived from `keys`
        self._archive = archive
        self._kept = kept
        self._dirty: set[StepId] = set()
        # Per plan, the levels worked out so far (see `levels`), kept up as the plan's
        # graph changes: derived, not state, so neither saved nor compared.
        self._levels: dict[PlanSlug, dict[StepId, int]] = {}
        self._handlers = self._dispatch()

    def retire_into(self, archive: Archive, kept: int = FINISHED_KEPT) -> None:
        """From now on, retire finished plans, reading them back from `archive` (a view
        restored from its saved state, which holds none)."""
        self._archive, self._kept = archive, kept

    @classmethod
    def restored(cls, *state: object) -> "LedgerView":
        """A view holding `state`: a value for each annotated attribute, in their order
        (what a checkpoint saved)."""
        view = cls()
        view.__dict__.update(zip(get_type_hints(cls), state, strict=True))
        return view

    def _dispatch(self) -> dict[type, Callable[[Any, int], None]]:
        handlers: dict[type, Callable[[Any, int], None]] = {}
        handlers.update(dict.fromkeys(_PLAN_EVENTS, self._on_plan))
        handlers.update(dict.fromkeys(_STEP_EVENTS, self._on_step))
        handlers.update(dict.fromkeys(_SESSION_EVENTS, self._on_session))
        handlers[ev.PathsReserved] = self._on_reserved
        handlers[ev.StepNoted] = self._on_noted
        handlers[ev.KeyIssued] = handlers[ev.KeyRevoked] = self._on_key
        return handlers

    def facts(self) -> dict[str, object]:
        """Everything the view holds, for comparing two views (a rebuild with the view
        kept incrementally); empty holdings count as none."""
        return {
            "position": self.position, "last_time": self.last_time, "plans": self.plans,
            "steps": self.steps, "sessions": self.sessions, "indexes": self.indexes,
            "dependents": self.dependents, "history": self.history,
            "plan_marks": self.plan_marks, "session_marks": self.session_marks,
            "held": {session: steps for session, steps in self.held.items() if steps},
            "ended_holders": self.ended_holders, "finished": self.finished,
            "finishing": self.finishing,
            "reservations": self.reservations, "keys": self.keys,
            "step_keys": self.step_keys,
        }

    # --- folding ------------------------------------------------------------------

    def apply(self, event: object, position: int) -> bool:
        """Fold one event found at `position`; False (and nothing changes) when that
        position is already applied, so a replayed page never counts twice. Call
        `settle` before asking the indexes anything."""
        return self.apply_all(((position, event),), settle=False) == 1

    def apply_all(self, events: Iterable[tuple[int, object]], settle: bool = True) -> int:
        """Fold (position, event) pairs in order, then settle; returns how many were new."""
        applied, last, handlers = 0, self.position, self._handlers
        try:
            for position, event in events:  # the rebuild's inner loop: kept flat on purpose
                if position <= last:
                    continue
                last = position
                applied += 1
                handler = handlers.get(type(event))
                if handler is not None:  # other layers' events (e.g. riders) pass by
                    handler(event, position)
                    self.last_time = event.timestamp  # type: ignore[attr-defined]
        finally:  # an event that failed to fold still counts as applied: never twice
            self.position = last
        if settle:
            self.settle()
        return applied

    def settle(self) -> None:
        """Judge again every step whose verdict the applied events may have changed."""
        dirty, self._dirty = self._dirty, set()
        for step_id in dirty:
            self._judge(step_id)

    def _on_plan(self, event: ev.LedgerEvent, position: int) -> None:
        slug = PlanSlug(event.originator_id.removeprefix(PLAN_STREAM_PREFIX))
        if slug in self.finished:
            self._revive(slug)
        plan = evolve_plan(self.plans.get(slug), event)  # our own table: mutated in place
        self.plans[slug] = plan
        if isinstance(event, ev.PlanCreated):
            self.indexes[slug] = PlanIndex(slug)
            self.plan_marks.setdefault(slug, array("q")).append(position)
            return
        step_id = StepId(event.step_id)  # type: ignore[attr-defined]
        self._remember(step_id, position)
        if isinstance(event, ev.StepAdded):
            defined = plan.steps[step_id]
            self.indexes[slug].add(step_id, defined.added_at, defined.priority)
            self._count_closing(slug, closed=False)
            if defined.key is not None:
                self.step_keys.setdefault(defined.key, set()).add(slug)
        if isinstance(event, ev.StepRevised) and event.priority is not None:
            self.indexes[slug].reprioritize(step_id, event.priority)
        if isinstance(event, ev.StepAdded) and event.parent is not None:
            # A parent waits on its children as on its dependencies (StepDef.waits_on).
            parent = StepId(event.parent)
            self.dependents.setdefault(step_id, set()).add(parent)
            self._levels.pop(slug, None)  # the parent's chain runs through the new child
            self._dirty.add(parent)
        if isinstance(event, ev.StepAdded | ev.DependenciesDeclared):
            for dep in event.depends_on:
                self.dependents.setdefault(StepId(dep), set()).add(step_id)
            if event.depends_on:  # a longer chain may now wait on its dependencies
                self._lengthen(slug, step_id, added=isinstance(event, ev.StepAdded))
            self._dirty.add(step_id)

    def _on_step(self, event: ev.LedgerEvent, position: int) -> None:
        step_id = StepId(event.originator_id)
        before = self.steps.get(step_id)
        if before is None and self.finished and type(event) is not ev.StepOpened:
            before = self._revived(step_id)
        after = self.steps[step_id] = evolve_step(before, event)
        positions = self.history.get(step_id)  # _remember, inlined: once per event
        if positions is None:
            positions = self.history[step_id] = array("q")
        positions.append(position)
        if before is None:
            self._dirty.add(step_id)
        elif before.status != after.status:
            self._dirty.add(step_id)
            if (before.status in SATISFYING) != (after.status in SATISFYING):
                self._dirty.update(self.dependents.get(step_id, ()))
                self._count_closing(after.plan, closed=after.status in SATISFYING)
                self._relevel(step_id, after)
        if after.status == "in_progress" or (before is not None
                                             and before.status == "in_progress"):
            self._note_lease(step_id, after)
        if before is not None and before.holder == after.holder:
            return  # a heartbeat, the usual event: nobody's holdings change
        if before is not None and before.holder is not None:
            self._let_go(before.holder, step_id)
        if after.holder is not None:
            self.held.setdefault(after.holder, set()).add(step_id)
            if self.holder_ended(after):
                self.ended_holders.add(after.holder)

    def _note_lease(self, step_id: StepId, step: StepState) -> None:
        """Keep the plan's expiry order (a step in progress with no holder or no expiry
        counts as lapsed from the start, as the claim rule judges it)."""
        index = self.indexes.get(step.plan)
        if index is None:
            return
        if step.status != "in_progress":
            index.hold_until(step_id, None)
        else:
            held = step.holder is not None and step.expires_at is not None
            index.hold_until(step_id, step.expires_at if held else TIMELESS)

    def _relevel(self, step_id: StepId, step: StepState) -> None:
        """Forget the levels the step opening or closing may change. A step closing once
        all it waits on is closed (the usual complete) changes none: every open chain
        through it passes a closed step first."""
        if step.status in SATISFYING:
            definition = self.definition(step_id)
            deps = definition.waits_on if definition is not None else ()
            if all(self.status_of(dep) in SATISFYING for dep in deps):
                return
        self._unlevel(step.plan, step_id)

    def _lengthen(self, plan: PlanSlug, step_id: StepId, *, added: bool) -> None:
        """The step now waits on more: those of its dependencies that are open may head
        longer chains. A new dependency only ever raises levels, so the known ones are
        raised up the graph, through open steps, as long as they grow (an unknown one
        counts in no known level above it: see `_unlevel`)."""
        known, state = self._levels.get(plan), self.plans.get(plan)
        if not known or state is None:
            return
        if added:  # its StepOpened is still to come: open, nothing waits on it yet
            known[step_id] = 1
        elif self.status_of(step_id) in SATISFYING:
            return  # closed: no chain runs through it
        else:
            self._level(known, step_id)
        stack = [step_id]
        while stack:
            child = stack.pop()
            level = known[child] + 1
            definition = state.steps.get(child)
            for dep in definition.waits_on if definition is not None else ():
                have = known.get(dep)
                if have is not None and have < level and self.status_of(dep) not in SATISFYING:
                    known[dep] = level
                    stack.append(dep)

    def _unlevel(self, plan: PlanSlug, step_id: StepId) -> None:
        """Forget the step's level and those of the steps it waits on, up its plan's graph,
        as far as they are known. A step's level is known only once those of its open
        dependents are (`_level`), so where one is unknown, none above it counts it."""
        known, state = self._levels.get(plan), self.plans.get(plan)
        if not known or state is None:
            return
        known.pop(step_id, None)
        stack = [step_id]
        while stack:
            definition = state.steps.get(stack.pop())
            for dep in definition.waits_on if definition is not None else ():
                if known.pop(dep, None) is not None:
                    stack.append(dep)

    def _let_go(self, session_id: SessionId, step_id: StepId) -> None:
        held = self.held.get(session_id)
        if held is not None:
            held.discard(step_id)
            if not held:
                del self.held[session_id]  # every session that ever held: not kept empty
                self.ended_holders.discard(session_id)

    def _on_session(self, event: ev.LedgerEvent, position: int) -> None:
        session_id = SessionId(event.originator_id)
        self.sessions[session_id] = evolve_session(self.sessions.get(session_id), event)
        if isinstance(event, ev.SessionStarted | ev.SessionEnded):
            self.session_marks.append(position)
            if isinstance(event, ev.SessionEnded) and self.held.get(session_id):
                self.ended_holders.add(session_id)  # its claims lapse now, releases or not
        elif isinstance(event, ev.ReadyListed):
            if event.plan in self.finished:
                self._revive(PlanSlug(event.plan))
            self.plan_marks.setdefault(PlanSlug(event.plan), array("q")).append(position)
        step_id = getattr(event, "step_id", None)
        if step_id is not None:  # a refused attempt on a step belongs to its history
            if self.finished and step_id not in self.steps:
                self._revived(StepId(step_id))
            self._remember(StepId(step_id), position)

    def _on_key(self, event: ev.LedgerEvent, position: int) -> None:
        name = event.name  # type: ignore[attr-defined]
        self.keys[name] = evolve_key(self.keys.get(name), event)
        self._key_index = None

    def key_index(self) -> "KeyIndex":
        """The keys by digest, and whether any is live. Made anew after a key event and
        swapped in whole, so the API's doors read it from the event loop without the read
        model's lock (a key is issued while they read: they see the old index or the new)."""
        index = self._key_index
        if index is None:
            keys = list(self.keys.values())
            index = self._key_index = KeyIndex({key.digest: key for key in keys},
                                               {key.name: key for key in keys},
                                               any(key.live for key in keys))
        return index

    def _on_reserved(self, event: ev.PathsReserved, position: int) -> None:
        step_id = StepId(event.step_id)
        if self.finished and step_id not in self.steps:
            self._revived(step_id)
        note_reserved(self.reservations, event)
        self._remember(step_id, position)

    def _on_noted(self, event: ev.StepNoted, position: int) -> None:
        # A note changes nothing a query judges: it joins the step's history (and so its
        # plan's timeline) and nothing else. Its text stays in the log, where a claim's
        # handler reads it, so the view's memory never grows with what notes say.
        step_id = StepId(event.originator_id)
        if self.finished and step_id not in self.steps:
            self._revived(step_id)
        self._remember(step_id, position)

    def _remember(self, step_id: StepId, position: int) -> None:
        positions = self.history.get(step_id)
        if positions is None:
            positions = self.history[step_id] = array("q")
        positions.append(position)

    # --- retiring finished plans ---------------------------------------------------

    def _count_closing(self, plan: PlanSlug, *, closed: bool) -> None:
        """Count a step of the plan closing (done, dropped) or opening (added, reopened). A
        plan with none open waits in `finishing`; past `kept` of them, the first retires."""
        index = self.indexes.get(plan)
        if index is None:
            return
        index.unclosed += -1 if closed else 1
        if self._archive is None:
            return
        if index.unclosed == 0:
            self._wait_to_retire(plan)
        elif not closed and index.unclosed == 1 and plan in self.finishing:
            self.finishing.remove(plan)

    def _wait_to_retire(self, plan: PlanSlug) -> None:
        self.finishing.append(plan)
        while len(self.finishing) > self._kept:
            self._retire(self.finishing.pop(0))

    def _retire(self, plan: PlanSlug) -> None:
        """Let the finished plan's detail go, keeping what lists it and where it is."""
        state = self.plans.pop(plan)
        del self.indexes[plan]
        self._levels.pop(plan, None)
        runs: list[Sequence[int]] = [self.plan_marks.pop(plan, ())]
        statuses = []
        for step_id in state.steps:
            step = self.steps.pop(step_id, None)
            statuses.append(step.status if step is not None else None)
            runs.append(self.history.pop(step_id, ()))
            self.dependents.pop(step_id, None)
            self.reservations.pop(step_id, None)  # its claims are over: none is live
            self._dirty.discard(step_id)
        self.finished[plan] = FinishedPlan(
            plan, state.title, state.created_at, len(state.steps), statuses.count("done"),
            statuses.count("dropped"), array("q", sorted(chain.from_iterable(runs))))
        if self._archive is not None:
            self._archive.retired(state)

    def _revived(self, step_id: StepId) -> StepState | None:
        """The step, once its plan is back if it had retired (an event names the step)."""
        plan = self._archive.plan_of(step_id) if self._archive is not None else None
        if plan is not None and plan in self.finished:
            self._revive(plan)
        return self.steps.get(step_id)

    def _revive(self, plan: PlanSlug) -> None:
        """Fold a retired plan's detail back in (an event about it arrived); it waits to
        retire again until the event at hand opens one of its steps."""
        finished = self.finished.pop(plan)
        archive, self._archive = self._archive, None  # its past moves no plan to retire
        assert archive is not None, "only a view with an archive retires plans"
        try:
            self.fold_past(archive.events_at(finished.positions))
        finally:
            self._archive = archive
        self._wait_to_retire(plan)

    def fold_past(self, events: Iterable[tuple[int, object]]) -> None:
        """Fold one plan's events read back from the log (its own stream's, its steps', and
        the refusals and listings naming them), in log order, into the tables: the view's
        position, time and sessions stay as they are."""
        for position, event in events:
            if isinstance(event, _PLAN_EVENTS):
                self._on_plan(event, position)
            elif isinstance(event, _STEP_EVENTS):
                self._on_step(event, position)
            elif isinstance(event, ev.ReadyListed):
                self.plan_marks.setdefault(PlanSlug(event.plan), array("q")).append(position)
            elif isinstance(event, ev.StepNoted):
                self._remember(StepId(event.originator_id), position)
            elif (step_id := getattr(event, "step_id", None)) is not None:
                self._remember(StepId(step_id), position)
        self.settle()

    def plans_with_key(self, key: str) -> list[PlanSlug]:
        """The plans with a step of this key (ledger.domain.references), by slug."""
        return sorted(self.step_keys.get(key, ()))

    def knows(self, plan: PlanSlug) -> bool:
        """Whether the plan was created (held here, or retired)."""
        return plan in self.plans or plan in self.finished

    def positions_of(self, plan: PlanSlug) -> list[Sequence[int]]:
        """The log positions of the plan's events (its own stream's, its steps', and the
        refusals and ready listings naming them), as a few ascending runs."""
        finished = self.finished.get(plan)
        if finished is not None:
            return [finished.positions]
        state = self.plans.get(plan)
        steps = [self.history.get(s, ()) for s in state.steps] if state is not None else []
        return [self.plan_marks.get(plan, ()), *steps]

    # --- judging ------------------------------------------------------------------

    def _judge(self, step_id: StepId) -> None:
        step = self.steps.get(step_id)
        index = self.indexes.get(step.plan) if step is not None else None
        if step is None or index is None or step_id not in index.keys:
            return  # its StepAdded or StepOpened is still to come
        if step.status != "open":
            index.place(step_id, step.status)  # judged at query time, or never again
            return
        definition = self.plans[step.plan].steps[step_id]
        verdict = assess(step, definition, self.status_of, False, TIMELESS)
        index.place(step_id, "ready" if verdict.kind == "claimable" else "blocked")

    # --- lookups the queries share ------------------------------------------------

    def step(self, step_id: StepId) -> StepState:
        step = self.steps.get(step_id)
        if step is None:
            raise errors.UnknownStep(step_id)
        return step

    def definition(self, step_id: StepId) -> StepDef | None:
        step = self.steps.get(step_id)
        plan = self.plans.get(step.plan) if step is not None else None
        return plan.steps.get(step_id) if plan is not None else None

    def status_of(self, step_id: StepId) -> str:
        step = self.steps.get(step_id)
        return step.status if step is not None else "open"

    def levels(self, plan: PlanSlug, step_ids: Sequence[StepId]) -> list[int]:
        """Each step's level: how long a chain of open steps waits on it, itself included
        (1 + the highest level of its dependents neither done nor dropped; 1: none waits
        on it). Claim-next hands out the highest first (`queries.claim_order`). Kept per
        plan: raised up the graph when a dependency is declared (`_lengthen`), forgotten
        above a step opened, or closed while something it waits on is open (`_relevel`),
        so a claim-next mostly looks its steps up."""
        known = self._levels.setdefault(plan, {})
        try:
            return list(map(known.__getitem__, step_ids))  # the hot path: all known
        except KeyError:
            return [known.get(s) or self._level(known, s) for s in step_ids]

    def _level(self, known: dict[StepId, int], step_id: StepId) -> int:
        """Work the step's level out into `known`, with every open step below it. Depth
        first without recursion: a chain of 10,000 steps is deeper than Python's stack."""
        steps, dependents = self.steps, self.dependents
        stack = [step_id]
        while stack:
            current = stack[-1]
            if current in known:  # reached twice (two of its dependencies were pending)
                stack.pop()
                continue
            waiting = [d for d in dependents.get(current, ())
                       if (s := steps.get(d)) is not None and s.status not in SATISFYING]
            todo = [d for d in waiting if d not in known]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            known[current] = 1 + max((known[d] for d in waiting), default=0)
        return known[step_id]

    def holder_ended(self, step: StepState) -> bool:
        if step.holder is None:
            return False
        session = self.sessions.get(step.holder)
        return session is not None and session.ended

    def verdict(self, step_id: StepId, now: datetime) -> Verdict:
        """What a claim on the step would meet at `now`: the claim rule itself."""
        step = self.step(step_id)
        definition = self.definition(step_id)
        assert definition is not None, f"step {step_id} has no definition"
        return assess(step, definition, self.status_of, self.holder_ended(step), now)
