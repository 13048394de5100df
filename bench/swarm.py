"""Swarm: 4, 8 and 16 agents work a 200-step DAG through a real server, waiting for steps.

Each agent is a thread with its own HTTP connection and session to one `planledger serve`
process (SQLite). It asks for the plan's next step (`claim-next` with a 1 s lease), works
it (sleeps its drawn work time, 5-50 ms) and completes it, until the plan is done. A few
steps (2%) crash their first claimer mid-step: it stops without a word, its lease lapses
and another agent takes the step over; the crashed agent comes back as a new session.

Reported per swarm size, for the same drawn plan and fortunes:
- waiting: agents ask with `wait_seconds`, so an idle agent is handed the next step the
  moment one is freed or lapses; its makespan against the physical bound,
  max(critical path, total work / N), where a crashed step's span on the path is its
  lease plus its work (nothing can take it sooner) and the crashed agent's half-done
  work counts as work. Goal: <= 1.1x the bound.
- polling: the same swarm asking without waiting and, when nothing is ready, asking again
  every 100 ms and every second (informs; the same bound).
"""

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
SEED = 19
JOIN = 300.0


@dataclass(frozen=True)
class Draw:
    """A plan and its fortunes: each step's dependencies (earlier steps) and work time
    (seconds), and the steps whose first claimer crashes halfway through."""

    depends_on: list[list[int]]
    work: list[float]
    crashes: frozenset[int]

    def bound(self, agents: int) -> float:
        """max(critical path, total work / agents) for this draw."""
        finish: list[float] = []
        for i, deps in enumerate(self.depends_on):
            span = self.work[i] + (LEASE if i in self.crashes else 0)
            finish.append(span + max((finish[d] for d in deps), default=0.0))
        total = sum(self.work) + sum(self.work[i] / 2 for i in self.crashes)
        critical = max(finish)
        return max(critical, total / agents)


def draw(steps: int, seed: int, work_ms: tuple[float, float]) -> Draw:
    """A random DAG whose steps each wait on up to two of the 60 before them."""
    rng = random.Random(seed)
    depends_on = [rng.sample(range(max(0, i - 60), i), k=min(i, rng.randint(0, 2)))
                  for i in range(steps)]
    work = [rng.uniform(*work_ms) / 1000 for _ in range(steps)]
    crashes = frozenset(i for i in range(steps) if rng.random() < CRASH_RATE)
    return Draw(depends_on, work, crashes)


@dataclass
class Swarm:
    """One run: `agents` threads on the plan `slug` (its step ids in draw order)."""

    url: str
    slug: str
    ids: list[str]
    plan: Draw
    poll: float | None  # seconds between polls; None: wait instead
    done_at: float = 0.0
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
            answer.raise_for_status()
            found = answer.json()
            if found["claimed"] is not None:
                claimed: dict[str, object] = found["claimed"]
                return claimed
            if found["reason"] == "all_done":
                return None
            if self.poll:
                time.sleep(self.poll)


def makespan(url: str, slug: str, plan: Draw, agents: int, poll: float | None) -> float:
    """Seconds from the swarm's start to the plan's last completion."""
    steps = [{"key": f"s{i}", "title": f"step {i}", "depends_on": [f"s{d}" for d in deps]}
             for i, deps in enumerate(plan.depends_on)]
    made = httpx.post(f"{url}/api/plans", headers=author_at(url), timeout=60,
                      json={"slug": slug, "title": slug, "steps": steps})
    made.raise_for_status()
    swarm = Swarm(url, slug, [s["step_id"] for s in made.json()["steps"]], plan, poll)
    started = threading.Barrier(agents + 1)
    threads = [threading.Thread(target=swarm.agent, args=(started,), daemon=True)
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
    return swarm.done_at - begun


def run(smoke: bool = False) -> list[Figure]:
    sizes, steps, rounds, work_ms = ([2], 20, 1, (1.0, 5.0)) if smoke else (
        [4, 8, 16], 200, 3, (5.0, 50.0))
    polls = [0.05] if smoke else [0.1, 1.0]
    plan = draw(steps, SEED, work_ms)
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
    bound, name = plan.bound(agents), "physical bound: max(critical path, work / N)"
    waited = [makespan(url, f"swarm-{agents}-wait-{r}", plan, agents, None)
              for r in range(rounds)]
    figures = [Figure(f"{agents} agents waiting: makespan", statistics.median(waited), "s",
                      name, bound, GOAL, lower_is_better=True, rounds=rounds)]
    for poll in polls:
        polled = makespan(url, f"swarm-{agents}-poll-{poll * 1000:.0f}", plan, agents, poll)
        figures.append(Figure(f"{agents} agents polling every {poll * 1000:.0f} ms: makespan",
                              polled, "s", name, bound))
    return figures
