"""Swarm: 4, 8 and 16 agents work a 200-step DAG through a real server, waiting for steps.

Each agent is a thread with its own HTTP connection and session to one `planledger serve`
process (SQLite). It asks for the plan's next step (`claim-next` with a 1 s lease), works
it (sleeps the step's drawn work time) and completes it, until the plan is done. A few
steps (2%) crash their first claimer mid-step: it stops without a word, its lease lapses
and another agent takes the step over; the crashed agent comes back as a new session.

The plan: 8 layers of 25 steps, each step waiting on one or two of the layer before; work
times drawn from 50-500 ms (agent steps of minutes, scaled down). Shorter work measures
the server rather than the waiting: on a 2-core machine a claim and a complete cost the
server ~7 ms of CPU and an agent ~15 ms of round trips, so with 16 agents and 5-50 ms
steps the server is the bottleneck, waiting or polling alike.

Reported per swarm size, for the same drawn plan and fortunes:
- waiting (`wait_seconds`): an idle agent is handed the next step as soon as one is
  freed or lapses. Its makespan against the physical bound, max(critical path, total
  work / N), where a crashed step spans its lease plus its work on the path (nothing can
  take it sooner) and the crashed agent's half-done work counts as work. Goal: <= 1.1x.
  Informing: against the same claim order simulated with no overhead at all (each free
  agent takes at once the claimable step heading the longest chain of steps still to
  be done, the oldest of equals: what claim-next hands out), which the bound does not
  account for.
- polling: the same swarm asking without waiting and, when nothing is ready, asking again
  every 100 ms and every second (the same bound); and the claim-next requests per step
  that waiting and 100 ms polling cost.
"""

import heapq
import random
import statistics
import threading
import time
from dataclasses import dataclass, field

import httpx

from planledger.bench.servers import ROOMY, author_at, start_replica
from planledger.bench.timing import Figure, scratch_dir

GOAL = 1.1
LEASE = 1  # seconds: the shortest lease, so a crash costs as little as it can
WAIT = 30  # seconds a waiting agent asks for at a time
CRASH_RATE = 0.02
# A draw whose oldest-first claim order alone was at the median of 20 draws (its ratio to
# the bound). Kept when claim-next came to take the longest chain first, so figures
# compare with earlier runs; in that order it is a kind draw at 16 agents (1.001x; the
# median of draws 0-19 is 1.021x, at 8 agents 1.033x, at 4 agents 1.008x).
SEED = 2
JOIN = 300.0
BOUND = "physical bound: max(critical path, work / N)"


@dataclass(frozen=True)
class Draw:
    """A plan and its fortunes: each step's dependencies (earlier steps) and work time
    (seconds), and the steps whose first claimer crashes halfway through."""

    depends_on: list[list[int]]
    work: list[float]
    crashes: frozenset[int]

    def bound(self, agents: int) -> float:
        """max(critical path, total work / agents)."""
        finish: list[float] = []
        for i, deps in enumerate(self.depends_on):
            span = self.work[i] + (LEASE if i in self.crashes else 0)
            finish.append(span + max((finish[d] for d in deps), default=0.0))
        total = sum(self.work) + sum(self.work[i] / 2 for i in self.crashes)
        critical = max(finish)
        return max(critical, total / agents)

    def in_claim_order(self, agents: int) -> float:
        """The makespan with nothing but work: each free agent takes the first claimable
        step in claim-next's order at once (`_first_claimable`); a crashed step is
        claimable again when its lease ends."""
        done: set[int] = set()
        taken: set[int] = set()  # held by a live lease (or done)
        crashed: set[int] = set()
        events: list[tuple[float, int, str]] = []
        free, now = agents, 0.0
        while len(done) < len(self.work):
            while free and (step := self._first_claimable(done, taken)) is not None:
                free -= 1
                taken.add(step)
                if step in self.crashes and step not in crashed:
                    crashed.add(step)
                    heapq.heappush(events, (now + self.work[step] / 2, step, "crashed"))
                    heapq.heappush(events, (now + LEASE, step, "lapsed"))
                else:
                    heapq.heappush(events, (now + self.work[step], step, "done"))
            now, step, what = heapq.heappop(events)
            free += what != "lapsed"
            if what == "done":
                done.add(step)
            elif what == "lapsed":
                taken.discard(step)
        return now

    def _first_claimable(self, done: set[int], taken: set[int]) -> int | None:
        """Claim-next's pick (every step has the same priority): the claimable step whose
        level is highest, the oldest of equals. A step's level is 1 + the highest level
        of the steps not done that depend on it (taken ones included: they wait on it
        too), as the read model keeps it."""
        levels = self._levels(done)
        claimable = (i for i, deps in enumerate(self.depends_on) if i not in taken
                     and all(d in done for d in deps))
        return min(claimable, key=lambda i: (-levels[i], i), default=None)

    def _levels(self, done: set[int]) -> list[int]:
        levels = [1] * len(self.depends_on)
        for i in reversed(range(len(self.depends_on))):  # a step waits on earlier ones
            if i not in done:
                for d in self.depends_on[i]:
                    levels[d] = max(levels[d], levels[i] + 1)
        return levels


def draw(steps: int, layers: int, work_ms: tuple[float, float], seed: int = SEED) -> Draw:
    """`steps` in `layers` layers, each step waiting on one or two of the layer before."""
    rng = random.Random(seed)
    per = steps // layers
    depends_on = []
    for i in range(steps):
        before = range(max(0, i // per - 1) * per, i // per * per)
        depends_on.append(rng.sample(before, k=min(len(before), rng.randint(1, 2))))
    work = [rng.uniform(*work_ms) / 1000 for _ in range(steps)]
    crashes = frozenset(i for i in range(steps) if rng.random() < CRASH_RATE)
    return Draw(depends_on, work, crashes)


@dataclass(frozen=True)
class Run:
    makespan: float  # seconds from the start to the plan's last completion
    asks: int  # claim-next requests made


@dataclass
class Swarm:
    """One run on the plan `slug` (its step ids in draw order)."""

    url: str
    slug: str
    ids: list[str]
    plan: Draw
    poll: float | None  # seconds between polls; None: wait instead
    done_at: float = 0.0
    asks: int = 0
    crashed: set[int] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def agent(self, started: threading.Barrier) -> None:
        http = self._session()
        index = {step_id: i for i, step_id in enumerate(self.ids)}
        started.wait(JOIN)
        while (claimed := self._next(http)) is not None:
            step_id = str(claimed["step_id"])
            i = index[step_id]
            if self._crashes(i):
                time.sleep(self.plan.work[i] / 2)
                http.close()  # gone without a word: its lease lapses
                http = self._session()
                continue
            time.sleep(self.plan.work[i])
            completed = http.post(f"/api/steps/{step_id}/complete",
                                  json={"fence": claimed["fence"]})
            if completed.status_code == 200:  # else its lease lapsed: another does it
                with self._lock:
                    self.done_at = max(self.done_at, time.monotonic())
        http.close()

    def _session(self) -> httpx.Client:
        http = httpx.Client(base_url=self.url, timeout=WAIT + 30)
        started = http.post("/api/sessions", json={"name": "swarm agent"})
        started.raise_for_status()
        http.headers["Authorization"] = f"Bearer {started.json()['token']}"
        return http

    def _crashes(self, i: int) -> bool:
        with self._lock:
            first = i in self.plan.crashes and i not in self.crashed
            self.crashed.add(i)
            return first

    def _next(self, http: httpx.Client) -> dict[str, object] | None:
        """The next step claimed, or None once the plan is done."""
        body = {"lease_seconds": LEASE} | ({} if self.poll else {"wait_seconds": WAIT})
        while True:
            answer = http.post(f"/api/plans/{self.slug}/claim-next", json=body)
            with self._lock:
                self.asks += 1
            answer.raise_for_status()
            found = answer.json()
            if found["claimed"] is not None:
                claimed: dict[str, object] = found["claimed"]
                return claimed
            if found["reason"] == "all_done":
                return None
            if self.poll:
                time.sleep(self.poll)


def swarm(url: str, slug: str, plan: Draw, agents: int, poll: float | None) -> Run:
    """Create the plan, let `agents` work it until it is done, check every step is."""
    steps = [{"key": f"s{i}", "title": f"step {i}", "depends_on": [f"s{d}" for d in deps]}
             for i, deps in enumerate(plan.depends_on)]
    made = httpx.post(f"{url}/api/plans", headers=author_at(url), timeout=60,
                      json={"slug": slug, "title": slug, "steps": steps})
    made.raise_for_status()
    run = Swarm(url, slug, [s["step_id"] for s in made.json()["steps"]], plan, poll)
    started = threading.Barrier(agents + 1)
    threads = [threading.Thread(target=run.agent, args=(started,), daemon=True)
               for _ in range(agents)]
    for thread in threads:
        thread.start()
    started.wait(JOIN)
    begun = time.monotonic()
    for thread in threads:
        thread.join(JOIN)
    progress = httpx.get(f"{url}/api/plans/{slug}", timeout=30).json()["progress"]
    if progress["done"] != len(plan.work) or any(t.is_alive() for t in threads):
        raise AssertionError(f"the swarm did not finish {slug}: {progress}")
    return Run(run.done_at - begun, run.asks)


def run(smoke: bool = False) -> list[Figure]:
    sizes, rounds = ([2], 1) if smoke else ([4, 8, 16], 3)
    plan = draw(20, 4, (1.0, 5.0)) if smoke else draw(200, 8, (50.0, 500.0))
    polls = [0.05] if smoke else [0.1, 1.0]
    figures: list[Figure] = []
    with scratch_dir("swarm") as directory:
        server = start_replica(str(directory / "swarm.sqlite"), ROOMY)
        try:
            for agents in sizes:
                figures += _size(server.url, plan, agents, rounds, polls)
        finally:
            server.stop()
    return figures


def _size(url: str, plan: Draw, agents: int, rounds: int, polls: list[float],
          ) -> list[Figure]:
    """The waiting swarm `rounds` times, each polling swarm once (it is slower by far)."""
    bound, ideal = plan.bound(agents), plan.in_claim_order(agents)
    waited = [swarm(url, f"swarm-{agents}-wait-{r}", plan, agents, None) for r in range(rounds)]
    makespan = statistics.median(w.makespan for w in waited)
    asks = statistics.median(w.asks for w in waited) / len(plan.work)
    name = f"{agents} agents waiting: makespan"
    figures = [Figure(name, makespan, "s", BOUND, bound, GOAL, lower_is_better=True,
                      rounds=rounds),
               Figure(name, makespan, "s", "the same claim order, no overhead (simulated)",
                      ideal, lower_is_better=True, rounds=rounds)]
    for poll in polls:
        polled = swarm(url, f"swarm-{agents}-poll-{poll * 1000:.0f}", plan, agents, poll)
        every = f"polling every {poll * 1000:.0f} ms"
        figures.append(Figure(f"{agents} agents {every}: makespan", polled.makespan, "s",
                              BOUND, bound, lower_is_better=True))
        if poll == polls[0]:
            figures.append(Figure(f"{agents} agents waiting: claim-next requests per step",
                                  asks, "requests", f"{every}: requests per step",
                                  polled.asks / len(plan.work), lower_is_better=True,
                                  rounds=rounds))
    return figures
