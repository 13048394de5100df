"""Soak: a server's resident memory against the events it has logged, while plans finish.

    python -m planledger.bench soak --seconds 600

`planledger serve` runs on an SQLite file, as deployed. Agents (threads, each with its own
keep-alive connection) work in cycles over HTTP, every write with an Idempotency-Key: a
planner session creates a plan of `STEPS` steps in `LANES` dependency chains, two worker
sessions take turns claiming the next ready step and completing it until the plan is
done, someone shows the finished plan, and all three sessions end. So the log grows with
history while the work open at any moment stays the same: a few plans per agent.

A sampler reads the server's resident set size (/proc/<pid>/status VmRSS) against the
log's position (`/healthz`) about once a second. After a warm-up (the first fifth of the
run: imports, caches and allocator arenas filling) the slope of RSS over events, by least
squares, is the figure: MiB per 10,000 events. Goal: at most 1 MiB per 10,000 events (an
absolute goal, the figure's baseline; RSS hardly depends on the neighbours' load, unlike
times). The growth over the whole run informs, and so do the log's events per 10,000
idempotent writes (each write is answered once: a row of the answers table beside the log,
or, in stores written before, an `AnswerRecorded` event in it), with the log's
idempotency records among them.
"""

import argparse
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from planledger.bench.memory import resident_bytes
from planledger.bench.servers import ROOMY, Replica, start_replica
from planledger.bench.timing import Figure, scratch_dir
from planledger.infra.sqlite_answers import ANSWERS_TABLE
from planledger.ledger.answers import AnswerRecorded

SECONDS, SMOKE_SECONDS = 600.0, 6.0
AGENTS = 4  # agent threads, each running cycles one after the other
STEPS, LANES = 24, 4  # a plan's steps, in LANES chains: step i waits for step i - LANES
WARMUP = 0.2  # the first fifth of the run is not measured
GOAL_MIB_PER_10K = 1.0
MIB = 1024 * 1024


@dataclass(frozen=True)
class Sample:
    seconds: float
    events: int
    rss: int


class Reply(Protocol):
    def raise_for_status(self) -> object: ...
    def json(self) -> Any: ...


class Http(Protocol):
    """What the agents need of an HTTP client: httpx's, or a test's client of an app."""

    def post(self, url: str, *, json: Any = None,
             headers: dict[str, str] | None = None) -> Reply: ...
    def get(self, url: str) -> Reply: ...
    def close(self) -> None: ...


class Cycles:
    """One agent thread's work, through `http` (a client of the server): plan, claim and
    complete every step, show, end."""

    def __init__(self, http: Http, name: str, steps: int = STEPS) -> None:
        self.http, self.name, self.steps = http, name, steps
        self.done = 0

    def write(self, path: str, token: str | None, body: object = None) -> Reply:
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        response = self.http.post(path, json=body, headers=headers)
        response.raise_for_status()
        return response

    def session(self, role: str) -> tuple[str, str]:
        started = self.write("/api/sessions", None, {"name": f"{self.name} {role}"}).json()
        return str(started["session_id"]), str(started["token"])

    def cycle(self) -> None:
        slug = f"{self.name}-{self.done}"
        planner = self.session("planner")
        workers = [self.session("worker a"), self.session("worker b")]
        steps = [{"key": f"s{i}", "title": f"step {i} of {slug}",
                  "depends_on": [f"s{i - LANES}"] if i >= LANES else []}
                 for i in range(self.steps)]
        self.write("/api/plans", planner[1], {"slug": slug, "title": slug, "steps": steps})
        turn = 0
        while True:
            _, token = workers[turn % 2]
            turn += 1
            claimed = self.write(f"/api/plans/{slug}/claim-next", token).json()["claimed"]
            if claimed is None:
                break
            self.write(f"/api/steps/{claimed['step_id']}/complete", token,
                       {"fence": claimed["fence"]})
        self.http.get(f"/api/plans/{slug}").raise_for_status()
        for session_id, token in [planner, *workers]:
            self.write(f"/api/sessions/{session_id}/end", token)
        self.done += 1

    def run_until(self, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                self.cycle()
        finally:
            self.http.close()


def sample(server: Replica, started: float) -> Sample:
    position = httpx.get(f"{server.url}/healthz", timeout=60).json()["position"]
    return Sample(time.monotonic() - started, int(position), resident_bytes(server.process.pid))


def soak(server: Replica, seconds: float, every: float) -> list[Sample]:
    """Run the agents against `server` for `seconds`, sampling every `every` seconds."""
    stop = threading.Event()
    agents = [Cycles(httpx.Client(base_url=server.url, timeout=60), f"agent-{i}")
              for i in range(AGENTS)]
    failures: list[BaseException] = []
    threads = [threading.Thread(target=_noting(failures, a.run_until), args=(stop,))
               for a in agents]
    started = time.monotonic()
    samples = [sample(server, started)]
    for thread in threads:
        thread.start()
    try:
        while time.monotonic() - started < seconds and not failures:
            stop.wait(every)  # the sampler's pace, not a synchronization
            samples.append(sample(server, started))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    if failures:
        raise RuntimeError(f"an agent failed: {failures[0]!r}") from failures[0]
    samples.append(sample(server, started))
    return samples


def _noting(failures: list[BaseException], work: Callable[[threading.Event], None],
            ) -> Callable[[threading.Event], None]:
    def run(stop: threading.Event) -> None:
        try:
            work(stop)
        except BaseException as error:
            failures.append(error)
            stop.set()
    return run


def slope_per_10k(samples: list[Sample]) -> float:
    """MiB of RSS per 10,000 events: the least-squares slope of RSS over the log position."""
    n = len(samples)
    if n < 2:
        return 0.0
    mean_x = sum(s.events for s in samples) / n
    mean_y = sum(s.rss for s in samples) / n
    spread = sum((s.events - mean_x) ** 2 for s in samples)
    if spread == 0:
        return 0.0
    slope = sum((s.events - mean_x) * (s.rss - mean_y) for s in samples) / spread
    return slope * 10_000 / MIB


def after_warmup(samples: list[Sample], seconds: float) -> list[Sample]:
    return [s for s in samples if s.seconds >= seconds * WARMUP]


@dataclass(frozen=True)
class Answers:
    """Where a run's idempotent answers went."""

    in_log: int  # AnswerRecorded events (as stores kept answers before their table)
    beside: int  # rows of the answers table (every answer within the retention window)
    events: int  # the log's events, answers among them or not

    @property
    def writes(self) -> int:
        return self.in_log + self.beside

    def events_per_10k_writes(self) -> float:
        return 10_000 * self.events / self.writes if self.writes else 0.0


def answer_share(db: Path) -> Answers:
    """How the store kept the run's answers, and how many events its log holds."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as connection:
        rows = connection.execute(
            "SELECT topic = ?, count(*) FROM stored_events GROUP BY topic = ?",
            (AnswerRecorded.TOPIC, AnswerRecorded.TOPIC)).fetchall()
        has_table = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ?", (ANSWERS_TABLE,)).fetchone()
        beside = connection.execute(f"SELECT count(*) FROM {ANSWERS_TABLE}").fetchone()[0] \
            if has_table else 0
    counts = {bool(is_answer): count for is_answer, count in rows}
    return Answers(counts.get(True, 0), int(beside), sum(counts.values()))


def run(smoke: bool = False, seconds: float | None = None) -> list[Figure]:
    length = seconds if seconds is not None else SMOKE_SECONDS if smoke else SECONDS
    with scratch_dir("soak") as directory:
        db = directory / "soak.sqlite"
        server = start_replica(str(db), ROOMY)
        try:
            samples = soak(server, length, 0.25 if length < 60 else 1.0)
        finally:
            server.stop()
        answers = answer_share(db)
    return figures(samples, length, answers)


def figures(samples: list[Sample], length: float, answers: Answers) -> list[Figure]:
    measured = after_warmup(samples, length)
    half = len(measured) // 2
    first, last = samples[0], samples[-1]
    return [
        Figure("server RSS growth per 10,000 events, after warm-up", slope_per_10k(measured),
               "MiB", "the goal", GOAL_MIB_PER_10K, goal=1.0, lower_is_better=True),
        Figure("the same, in the second half of the measured run", slope_per_10k(
            measured[half:]), "MiB", "in the first half", slope_per_10k(measured[:half])),
        Figure(f"server RSS after {last.events:,} events ({length:g} s)", last.rss / MIB,
               "MiB", "at the start (empty log)", first.rss / MIB),
        Figure("log events per 10,000 idempotent writes", answers.events_per_10k_writes(),
               "events"),
        Figure("idempotency records (AnswerRecorded) in the log", answers.in_log, "events",
               "all events", answers.events),
        Figure("idempotent answers kept beside the log", answers.beside, "rows",
               "idempotent writes", answers.writes),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m planledger.bench.soak",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=SECONDS)
    args = parser.parse_args()
    for figure in run(seconds=args.seconds):
        print(f"{figure.name}: {figure.value:.3f} {figure.unit}"
              + (f" ({figure.baseline_name}: {figure.baseline:.3f})"
                 if figure.baseline is not None else ""))


if __name__ == "__main__":
    main()
