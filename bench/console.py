"""The console on a 20,000-step plan: its first reads, and what open consoles cost a claim.

One `planledger serve` on a log holding one plan of 20,000 steps (the first 1,000 ready,
each later one waiting on the step 1,000 before it). Figures, medians of several reads:
the console's first read (`GET /api/console`: every plan's line, a page of each
unfinished plan's steps, the sessions) in bytes and milliseconds, next to the whole plan
(`GET /api/plans/big`, what the console's snapshot held and every console read again on
every change); its first timeline read (`GET /api/console/timeline`, the newest part)
next to the plan's whole timeline (what it read before); and the median claim round trip
with 0 consoles open, with 3 consoles following the stream as the page does (each
message applied as it comes, the timeline read since its last position), and with 3
consoles that read the whole plan again on every message (the console before it was
paged). Claims are made one after another, a short pause between them. Goal: 3 open
consoles cost a claim at most 1.5x its time with none.
"""

import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from planledger.bench.ledger_log import LogBuilder
from planledger.bench.servers import ROOMY, Agent, Replica, start_replica
from planledger.bench.timing import Figure, scratch_dir
from planledger.infra.persistence import open_event_store

PLAN = "big"
WIDTH = 1000  # steps ready at the start; each later step waits on the one WIDTH before it
CONSOLES = 3
PAUSE = 0.05  # seconds between claims: an agent's pace, so consoles get to read between
GOAL = 1.5
Reader = Callable[[httpx.Client, int], None]  # what a console does with a message


def build(db: Path, steps: int) -> None:
    store = open_event_store(str(db))
    try:
        builder = LogBuilder(store)
        builder.plan(PLAN, [[i - WIDTH] if i >= WIDTH else [] for i in range(steps)])
        builder.flush()
    finally:
        store.close()


def _timed_get(http: httpx.Client, path: str) -> tuple[float, int]:
    started = time.perf_counter()
    answer = http.get(path)
    answer.raise_for_status()
    return time.perf_counter() - started, len(answer.content)


def _reads(http: httpx.Client, path: str, rounds: int) -> tuple[float, int]:
    """Median seconds and the size in bytes of `rounds` reads of `path`."""
    found = [_timed_get(http, path) for _ in range(rounds)]
    return statistics.median(t for t, _ in found), found[-1][1]


def follow_changes(http: httpx.Client, position: int) -> None:
    """The page today: the change is in the message; the timeline is read since."""
    http.get("/api/timeline", params={"plan": PLAN, "after": position}).raise_for_status()


def read_whole_plan(http: httpx.Client, position: int) -> None:
    """The page before paging: everything read again on every message."""
    http.get(f"/api/plans/{PLAN}").raise_for_status()
    follow_changes(http, position)


def _console(server: Replica, after: int, reader: Reader, ready: threading.Barrier,
             stop: threading.Event, opened: list[httpx.Response]) -> None:
    with httpx.Client(base_url=server.url, timeout=None) as stream_http, \
            httpx.Client(base_url=server.url, timeout=60) as http:
        try:
            with stream_http.stream("GET", "/api/console/events",
                                    params={"after": after}) as stream:
                opened.append(stream)
                ready.wait(60)
                event = ""
                for line in stream.iter_lines():
                    if stop.is_set():
                        return
                    if line.startswith("event:"):
                        event = line.removeprefix("event:").strip()
                    elif line.startswith("id:") and event == "log":
                        reader(http, int(line.removeprefix("id:").strip()))
        except (httpx.HTTPError, RuntimeError):  # closed from outside when the run ends
            return


@contextmanager
def consoles(server: Replica, count: int, reader: Reader) -> Iterator[None]:
    """`count` consoles following the stream from the log's end, each doing `reader` with
    every message, until the block ends."""
    after = int(httpx.get(f"{server.url}/api/console", timeout=60).json()["position"])
    ready, stop = threading.Barrier(count + 1), threading.Event()
    opened: list[httpx.Response] = []
    threads = [threading.Thread(target=_console, daemon=True,
                                args=(server, after, reader, ready, stop, opened))
               for _ in range(count)]
    for thread in threads:
        thread.start()
    ready.wait(60)
    try:
        yield
    finally:
        stop.set()
        # A stream blocked waiting for its next message sees `stop` only when one comes:
        # a session started is one (closing the response from here does not wake it).
        httpx.post(f"{server.url}/api/sessions", json={"name": "consoles-closed"},
                   timeout=60).raise_for_status()
        for thread in threads:
            thread.join(5)
        for response in opened:
            response.close()


def claim_times(agent: Agent, steps: Iterator[str], claims: int) -> list[float]:
    times = []
    for _ in range(claims):
        step = next(steps)
        started = time.perf_counter()
        agent.claim(step).raise_for_status()
        times.append(time.perf_counter() - started)
        time.sleep(PAUSE)
    return times


def ready_ids(server: Replica) -> Iterator[str]:
    """The plan's first WIDTH steps (ready at the start), from the console's own pages."""
    offset: int | None = 0
    while offset is not None and offset < WIDTH:
        page = httpx.get(f"{server.url}/api/console/steps", timeout=60, params={
            "plan": PLAN, "offset": offset, "limit": 500, "show": "claimable"}).json()
        yield from (s["step_id"] for s in page["steps"])
        offset = page["next_offset"]


def run(smoke: bool = False) -> list[Figure]:
    steps, rounds, claims = (1500, 3, 6) if smoke else (20_000, 7, 40)
    ms = 1000
    with scratch_dir("console") as directory:
        build(directory / "log.sqlite", steps)
        server = start_replica(str(directory / "log.sqlite"), ROOMY)
        try:
            with httpx.Client(base_url=server.url, timeout=120) as http:
                first, first_size = _reads(http, f"/api/console?plan={PLAN}", rounds)
                whole, whole_size = _reads(http, f"/api/plans/{PLAN}", rounds)
                whole_timeline, whole_timeline_size = _reads(
                    http, f"/api/timeline?plan={PLAN}", 1)  # the first: builds the plan's
                timeline, timeline_size = _reads(http, f"/api/console/timeline?plan={PLAN}",
                                                 rounds)
                whole_timeline, whole_timeline_size = _reads(
                    http, f"/api/timeline?plan={PLAN}", rounds)
            agent = Agent(server, "claimer")
            ready = ready_ids(server)
            claim_times(agent, ready, 3)  # warm: connection, session, caches
            alone = claim_times(agent, ready, claims)
            with consoles(server, CONSOLES, follow_changes):
                following = claim_times(agent, ready, claims)
            alone += claim_times(agent, ready, claims)
            with consoles(server, CONSOLES, read_whole_plan):
                rereading = claim_times(agent, ready, claims)
            agent.close()
        finally:
            server.stop()
    kb = 1 / 1024
    none = statistics.median(alone) * ms
    return [
        Figure(f"console first read, {steps:,}-step plan: size", first_size * kb, "KiB",
               "the whole plan (the old snapshot's part)", whole_size * kb,
               lower_is_better=True, rounds=rounds),
        Figure(f"console first read, {steps:,}-step plan: time", first * ms, "ms",
               "the whole plan (the old snapshot's part)", whole * ms,
               lower_is_better=True, rounds=rounds),
        Figure(f"claim p50, {CONSOLES} consoles following the stream",
               statistics.median(following) * ms, "ms", "claim p50, no console", none,
               goal=GOAL, lower_is_better=True, rounds=claims),
        Figure(f"claim p50, {CONSOLES} consoles reading the whole plan on every change",
               statistics.median(rereading) * ms, "ms", "claim p50, no console", none,
               lower_is_better=True, rounds=claims),
        Figure("the console's first timeline read (its newest part): size",
               timeline_size * kb, "KiB", "the plan's whole timeline",
               whole_timeline_size * kb, lower_is_better=True, rounds=rounds),
        Figure("the console's first timeline read (its newest part): time",
               timeline * ms, "ms", "the plan's whole timeline", whole_timeline * ms,
               lower_is_better=True, rounds=rounds),
    ]
