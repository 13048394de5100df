"""Rebuild: events/s folding the whole log into the read models, against bare read + decode.

Measured side by side with the library's bare notification read plus decode of the log.

The log (SQLite): plans of 1,000 steps in layers of 25 (each step waits on 2 steps of
the layer before); agents work a layer at a time, interleaved: claim, 0-8 heartbeats,
now and then a bounce off the holder or a release and a re-claim, then complete (a few
drop). About 200,000 events: mostly heartbeats, as in a long-running fleet.

- measured: a fresh `ReadModel` catching up from position 0 (read, decode, fold with
  the domain's `evolve_*`, judge readiness, index holders and history);
- baseline: `recorder.select_notifications` in the same pages plus `mapper.to_domain_event`
  for each notification, and nothing else.
Goals: at least half the baseline's rate, and 50,000 events/s or more. The rebuild pauses
the garbage collector per page (see `projections.log.paused_gc`), which speeds up its
decoding too; a second baseline pauses it the same way, so the ratio to it is the cost of
the fold alone.

The checkpoint of the rebuilt read model, too: its save (the state copied out, written as
JSON, tagged with its HMAC) and its load (tag, binding and every field checked, the view
built back), and its size, next to pickling and unpickling the same view, which is how
checkpoints were kept before (pickle is only the baseline here: the bench unpickles
nothing but the bytes it pickled a moment before). Goals: no more than three times the
pickle's save and twice its load; the save holds readers up only while the state is
copied out.
"""

import pickle
import random
import statistics
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from planledger.bench.ledger_log import LogBuilder, StillClock, layered_graph
from planledger.bench.timing import Figure, rate, scratch_dir
from planledger.infra.persistence import open_event_store
from planledger.ledger.domain.events import LedgerEvent
from planledger.ledger.domain.ids import SessionId, StepId
from planledger.ledger.store import EventStore
from planledger.projections.log import PAGE, paused_gc
from planledger.projections.readmodel import ReadModel
from planledger.projections.resume import (
    binding_at,
    checkpoint_key,
    restored_view,
    saved_state,
    state_data,
)
from planledger.projections.view import LedgerView

GOAL = 0.5
SAVE_GOAL, LOAD_GOAL = 3.0, 2.0


def build(db: Path, plans: int, steps: int, width: int, seed: int = 1) -> EventStore:
    store = open_event_store(str(db))
    builder, rng = LogBuilder(store, step_ms=5), random.Random(seed)
    agents = [builder.session(f"agent {i}") for i in range(width)]
    for p in range(plans):
        ids = builder.plan(f"plan-{p}", layered_graph(steps, width, fan_in=2, seed=p))
        for start in range(0, steps, width):
            _work_layer(builder, rng, ids[start: start + width], agents)
    builder.flush()
    return store


def _work_layer(builder: LogBuilder, rng: random.Random, layer: list[StepId],
                agents: list[SessionId]) -> None:
    """Each agent works one step of the layer; their events interleave at random."""
    scripts = [_script(rng, step, agent, agents) for step, agent in zip(layer, agents,
                                                                         strict=False)]
    while scripts:
        script = rng.choice(scripts)
        action, *args = script.pop()
        getattr(builder, str(action))(*args)
        if not script:
            scripts.remove(script)


def _script(rng: random.Random, step: StepId, agent: SessionId,
            agents: list[SessionId]) -> list[tuple[object, ...]]:
    """One step's events, last first (popped from the end)."""
    events: list[tuple[object, ...]] = [("claim", step, agent)]
    if rng.random() < 0.05:
        events += [("release", step, agent), ("claim", step, agent)]
    for _ in range(rng.randint(0, 8)):
        events.append(("heartbeat", step, agent))
        if rng.random() < 0.03:
            events.append(("bounce", step, rng.choice(agents), agent))
    events.append(("drop" if rng.random() < 0.03 else "complete", step, agent))
    return events[::-1]


def bare_read_and_decode(store: EventStore, count: int, gc_paused: bool = False) -> float:
    """Events/s of the library alone: read the log in pages, decode every notification
    (with the garbage collector paused per page, as the rebuild does, when `gc_paused`)."""

    def page(position: int) -> int:
        notes = store.recorder.select_notifications(
            start=position, limit=PAGE, inclusive_of_start=False)
        for note in notes:
            store.mapper.to_domain_event(note)
        return notes[-1].id if len(notes) == PAGE else -1

    def work() -> None:
        position = 0
        while position >= 0:
            if gc_paused:
                with paused_gc():
                    position = page(position)
            else:
                position = page(position)

    return rate(count, work)


def rebuild(store: EventStore, count: int) -> tuple[float, LedgerView]:
    clock = StillClock(datetime_after(store))
    model = ReadModel(store, clock, pull_on_read=False)
    found = rate(count, model.catch_up)
    assert model.position == count, "the rebuild stopped short of the log's end"
    return found, model.view


def seconds(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def _folded_state(view: LedgerView) -> dict[str, object]:
    """The view's folded state, as a pickled checkpoint held it: without what it is wired
    to at run time (the log it reads retired plans back from, its bound event handlers)."""
    return {k: v for k, v in vars(view).items() if k not in ("_archive", "_handlers")}


def checkpoint_round(store: EventStore, view: LedgerView) -> dict[str, float]:
    """One save and one load of the view's checkpoint, and one pickle and unpickle of it;
    seconds, and the sizes in MB."""
    key, binding = checkpoint_key(b"a bench's secret, 32 bytes or more"), binding_at(
        store, view.position)
    assert binding is not None
    saved: list[bytes] = []
    pickled: list[bytes] = []
    found = {
        "save": seconds(lambda: saved.append(saved_state(state_data(view), binding, key))),
        "pickle save": seconds(lambda: pickled.append(
            pickle.dumps(_folded_state(view), protocol=pickle.HIGHEST_PROTOCOL))),
        "load": seconds(lambda: restored_view(store, view.position, saved[0], key)),
        "pickle load": seconds(lambda: pickle.loads(pickled[0])),  # the bytes made just above
    }
    return {**found, "size": len(saved[0]) / 1e6, "pickle size": len(pickled[0]) / 1e6}


def datetime_after(store: EventStore) -> datetime:
    """A moment just after the log's last event."""
    last = store.recorder.select_notifications(start=store.recorder.max_notification_id(),
                                               limit=1)
    event = store.mapper.to_domain_event(last[0])
    assert isinstance(event, LedgerEvent)
    return event.timestamp + timedelta(seconds=1)


def run(smoke: bool = False) -> list[Figure]:
    plans, steps, width, rounds = (2, 100, 10, 1) if smoke else (25, 1_000, 25, 7)
    with scratch_dir("rebuild") as directory:
        store = build(directory / "log.sqlite", plans, steps, width)
        count = store.recorder.max_notification_id() or 0
        found: dict[str, list[float]] = {"rebuild": [], "bare": [], "paused": []}
        for _ in range(rounds):  # the three back to back, so all see the same neighbours
            found["bare"].append(bare_read_and_decode(store, count))
            found["paused"].append(bare_read_and_decode(store, count, gc_paused=True))
            rebuilt, view = rebuild(store, count)
            found["rebuild"].append(rebuilt)
            for what, figure in checkpoint_round(store, view).items():
                found.setdefault(what, []).append(figure)
            del view  # the next round's measures run without a second state in the heap
        store.close()
    median = {what: statistics.median(figures) for what, figures in found.items()}
    name = f"rebuild of a {count:,}-event log (goal >= 50,000 events/s)"
    checkpoint = f"the checkpoint of that log's read model ({median['size']:.1f} MB"
    return [
        Figure(name, median["rebuild"], "events/s", "bare library read + decode, same pages",
               median["bare"], GOAL, rounds=rounds),
        Figure(name, median["rebuild"], "events/s",
               "the same bare read + decode, GC paused per page", median["paused"],
               rounds=rounds),
        Figure(f"{checkpoint}): save", median["save"] * 1000, "ms",
               "pickling the same view", median["pickle save"] * 1000, SAVE_GOAL,
               lower_is_better=True, rounds=rounds),
        Figure(f"{checkpoint}): load", median["load"] * 1000, "ms",
               "unpickling the same view", median["pickle load"] * 1000, LOAD_GOAL,
               lower_is_better=True, rounds=rounds),
        Figure(f"{checkpoint}): size", median["size"], "MB", "the pickle's size",
               median["pickle size"], lower_is_better=True, rounds=rounds),
    ]
