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
"""

import random
import statistics
from datetime import datetime, timedelta
from pathlib import Path

from bench.ledger_log import LogBuilder, StillClock, layered_graph
from bench.timing import Figure, rate, scratch_dir
from ledger.domain.events import LedgerEvent
from ledger.domain.ids import SessionId, StepId
from ledger.storage import store_settings
from ledger.store import EventStore
from projections.log import PAGE, paused_gc
from projections.readmodel import ReadModel

GOAL = 0.5


def build(db: Path, plans: int, steps: int, width: int, seed: int = 1) -> EventStore:
    store = EventStore(store_settings(str(db)))
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


def rebuild(store: EventStore, count: int) -> float:
    clock = StillClock(datetime_after(store))
    model = ReadModel(store, clock, pull_on_read=False)
    found = rate(count, model.catch_up)
    assert model.position == count, "the rebuild stopped short of the log's end"
    return found


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
            found["rebuild"].append(rebuild(store, count))
        store.close()
    value, base, paused = (statistics.median(found[k]) for k in ("rebuild", "bare", "paused"))
    name = f"rebuild of a {count:,}-event log (goal >= 50,000 events/s)"
    return [
        Figure(name, value, "events/s", "bare library read + decode, same pages", base, GOAL,
               rounds=rounds),
        Figure(name, value, "events/s", "the same bare read + decode, GC paused per page",
               paused, rounds=rounds),
    ]
