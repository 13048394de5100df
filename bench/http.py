"""6. HTTP: claim round trips per second through uvicorn, N concurrent clients.

The server is `planledger serve` on an SQLite file in its own process, as deployed; each
client (a thread with its own keep-alive connection and session) claims steps nobody
else claims, so the figure is throughput, not contention. Baseline, same run, same
clients, same uvicorn settings: a bare FastAPI app whose POST route does nothing.
Goal: at least half the bare rate.

Also, informing: one client's claim round trips while another posts plans of the largest
size a request may carry (`PLANLEDGER_MAX_STEPS_PER_REQUEST`, default 1000), beside the
same client's claims with nothing else going on: the median and the 99th percentile.
"""

import math
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as ProcessEvent
from pathlib import Path

import httpx
from fastapi import FastAPI

from planledger.api.settings import DEFAULT_MAX_STEPS_PER_REQUEST
from planledger.bench.servers import ROOMY, Agent, Replica, create_plan, free_port, start_replica
from planledger.bench.timing import Figure, scratch_dir

GOAL = 0.5


def bare_app() -> FastAPI:
    """The baseline: FastAPI and uvicorn with nothing behind the route."""
    app = FastAPI()

    @app.post("/nothing")
    def nothing() -> dict[str, bool]:
        return {"ok": True}

    @app.get("/healthz")
    def healthz() -> dict[str, bool]:
        return {"ok": True}

    return app


@contextmanager
def bare_server(directory: Path) -> Iterator[Replica]:
    """The bare app under uvicorn, with the log level `planledger serve` uses."""
    port = free_port()
    log = (directory / "bare.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "planledger.bench.http:bare_app", "--factory", "--host",
         "127.0.0.1", "--port", str(port), "--log-level", "info", "--http", "httptools",
         "--loop", "auto"],
        stdout=log, stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parent.parent,
        env={**os.environ})
    server = Replica("bare", port, process, log)
    try:
        _wait_up(server)
        yield server
    finally:
        server.stop()


def _wait_up(server: Replica, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:  # polling with a deadline: the server is booting
        try:
            if httpx.get(f"{server.url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError(f"bare server did not start: {server.output()}")


def _cpu_seconds(server: Replica) -> float:
    """User + system CPU the server process has used, in 10 ms ticks (Linux /proc; NaN
    elsewhere, and the CPU figures are left out)."""
    try:
        fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Load:
    rate: float  # requests per second
    server_cpu: float  # seconds of server CPU per request


def _concurrently(server: Replica, clients: int, work: Callable[[int], int]) -> Load:
    """Requests per second of `clients` threads each running `work(i)` (it returns how
    many requests it made), and the server's CPU per request meanwhile."""
    with ThreadPoolExecutor(clients) as pool:
        cpu, started = _cpu_seconds(server), time.perf_counter()
        total = sum(pool.map(work, range(clients)))
        elapsed, cpu = time.perf_counter() - started, _cpu_seconds(server) - cpu
    return Load(total / elapsed, cpu / total)


def bare_rate(server: Replica, clients: int, requests: int) -> Load:
    sessions = [httpx.Client(base_url=server.url, timeout=30) for _ in range(clients)]

    def work(i: int) -> int:
        for _ in range(requests):
            sessions[i].post("/nothing").raise_for_status()
        return requests

    try:
        return _concurrently(server, clients, work)
    finally:
        for client in sessions:
            client.close()


def claim_rate(server: Replica, clients: int, requests: int, plan: str) -> Load:
    steps = create_plan(server, plan, [{"title": f"step {i}"} for i in range(clients * requests)])
    agents = [Agent(server, f"client {i}") for i in range(clients)]

    def work(i: int) -> int:
        for step in steps[i * requests:(i + 1) * requests]:
            agents[i].claim(step).raise_for_status()
        return requests

    try:
        return _concurrently(server, clients, work)
    finally:
        for agent in agents:
            agent.close()


def _claim_seconds(agent: Agent, steps: list[str],
                   going: Callable[[], bool] = lambda: True) -> list[float]:
    seconds = []
    for step in steps:
        if not going():
            break
        started = time.perf_counter()
        agent.claim(step).raise_for_status()
        seconds.append(time.perf_counter() - started)
    return seconds


def _plan_body(slug: str, steps: int) -> dict[str, object]:
    return {"slug": slug, "title": slug, "steps": [{"title": f"step {n}"} for n in range(steps)]}


def _post_plans(url: str, token: str, slugs: list[str], steps: int, posting: ProcessEvent,
                posted: ProcessEvent, seconds: "Queue[float]") -> None:
    """The other caller, in a process of its own as another agent's would be (a thread of
    the claimer's process would take turns with the claimer at its interpreter lock):
    posts the plans back to back, and each one's round trip."""
    with httpx.Client(base_url=url, timeout=120,
                      headers={"Authorization": f"Bearer {token}"}) as http:
        posting.set()
        for slug in slugs:
            body = _plan_body(slug, steps)
            started = time.perf_counter()
            http.post("/api/plans", json=body).raise_for_status()
            seconds.put(time.perf_counter() - started)
        posted.set()


def claims_beside_a_large_plan(server: Replica, plans: int) -> list[Figure]:
    """Claim latency, alone and while another process posts `plans` plans of the cap's size
    back to back; and those plans' round trips against the same plans posted alone."""
    cap = DEFAULT_MAX_STEPS_PER_REQUEST
    agent, planner = Agent(server, "claimer"), Agent(server, "planner")
    context = multiprocessing.get_context("spawn")
    posting, posted, times = context.Event(), context.Event(), context.Queue()

    def plan(slug: str) -> tuple[float, list[str]]:
        body = _plan_body(slug, cap)
        started = time.perf_counter()
        made = agent.http.post("/api/plans", timeout=120, json=body)
        made.raise_for_status()
        return time.perf_counter() - started, [str(s["step_id"]) for s in made.json()["steps"]]

    made = [plan(part) for part in ("beside-1", "beside-2", "beside-3")]
    steps = [s for _, part in made for s in part]
    writer = context.Process(target=_post_plans, args=(
        server.url, planner.token, [f"large-{i}" for i in range(plans)], cap, posting, posted,
        times))
    try:
        _claim_seconds(agent, steps[:30])
        alone = _claim_seconds(agent, steps[30:280])
        writer.start()
        try:
            if not posting.wait(timeout=60):
                raise RuntimeError("the process posting plans did not start")
            beside = _claim_seconds(agent, steps[280:-250],
                                    lambda: writer.is_alive() and not posted.is_set())
            written = [times.get(timeout=120) for _ in range(plans)]
        finally:
            writer.join(timeout=120)
        # Alone before and after: a machine shared with other work drifts meanwhile.
        alone += _claim_seconds(agent, steps[-250:])
    finally:
        agent.close()
        planner.close()
    return _beside_figures(cap, alone, beside, [s for s, _ in made], written)


def _beside_figures(cap: int, alone: list[float], beside: list[float],
                    plans_alone: list[float], plans_beside: list[float]) -> list[Figure]:
    def p99(seconds: list[float]) -> float:
        return statistics.quantiles(seconds, n=100)[-1] * 1e3

    def median(seconds: list[float]) -> float:
        return statistics.median(seconds) * 1e3

    name = f"HTTP claim latency while {cap}-step plans are written"
    return [
        Figure(f"{name}, median", median(beside), "ms", "median claim, nothing else written",
               median(alone), lower_is_better=True),
        Figure(f"{name}, p99", p99(beside), "ms", "p99 claim, nothing else written",
               p99(alone), lower_is_better=True),
        # Informs: what the plans pay for the claims' turns (ledger.turns).
        Figure(f"HTTP {cap}-step plan round trip while claims go on, median",
               median(plans_beside), "ms", "the same plan with nothing else going on",
               median(plans_alone), lower_is_better=True),
    ]


def run(smoke: bool = False) -> list[Figure]:
    # Smoke: enough requests that the server's CPU (read in 10 ms ticks) is not 0.
    client_counts, requests, rounds = ([2], 100, 1) if smoke else ([1, 8], 150, 5)
    figures = []
    with scratch_dir("http") as directory, bare_server(directory) as bare:
        server = start_replica(str(directory / "ledger.sqlite"), ROOMY)
        try:
            for clients in client_counts:
                claims, bases = [], []
                for r in range(rounds):
                    bases.append(bare_rate(bare, clients, requests))
                    claims.append(claim_rate(server, clients, requests, f"c{clients}-r{r}"))
                figures += _figures(clients, claims, bases, rounds)
            figures += claims_beside_a_large_plan(server, 2 if smoke else 8)
        finally:
            server.stop()
    return figures


def _figures(clients: int, claims: list[Load], bases: list[Load], rounds: int) -> list[Figure]:
    def median(loads: list[Load], of: Callable[[Load], float]) -> float:
        return statistics.median(of(load) for load in loads)

    rate, cpu = (lambda load: load.rate), (lambda load: load.server_cpu * 1e6)
    figures = [
        Figure(f"HTTP claim round trips/s, {clients} client(s)", median(claims, rate),
               "req/s", "bare FastAPI route doing nothing, same uvicorn",
               median(bases, rate), GOAL, rounds=rounds)]
    if math.isnan(claims[0].server_cpu):  # no /proc to read it from
        return figures
    return [
        *figures,
        # Informs: what the server spends on each request, which the clients' share of the
        # machine's two cores does not blur the way it blurs the rates.
        Figure(f"HTTP server CPU per claim, {clients} client(s)", median(claims, cpu), "us",
               "server CPU per bare request", median(bases, cpu), lower_is_better=True,
               rounds=rounds),
    ]
