"""A full disk under `planledger serve` (SQLite): what a refused write costs, and reads beside it.

The store lives on a small tmpfs in a mount namespace of the server's own (`unshare -m`;
skipped where that is not allowed), filled with plans until writes answer 503. Then, on the
same server: `/healthz` latency (median, p99) idle, and with 1 and 4 clients retrying
writes as fast as they are refused; a refused write's latency (median) with one writer.
Where a refused write's time goes: the server's CPU time per refusal (user and system, from
/proc, over refusals sent back to back by one client, with no reads beside them), next to a
refusal's latency as the client sees it. Goals (issue 20): a refused write <= 10 ms;
`/healthz` median with four writers retrying <= 2x idle, for writers that pause 50 ms
between tries (20x as eager as the server's Retry-After); writers retrying back to back,
with no pause, inform (on a 2-core machine they and the server share the processors).
"""

import multiprocessing
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from pathlib import Path

import httpx

from planledger.bench.servers import (
    PLANLEDGER,
    SECRET,
    Replica,
    author_at,
    free_port,
    wait_healthy,
)
from planledger.bench.timing import Figure

BODY = "x" * 15_000
# A retrying client's pause: 20 times as eager as the Retry-After: 1 the server sends.
PACE = 0.05


def can_mount() -> bool:
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs -o size=1m none /mnt"], capture_output=True,
                           check=False)
    return probe.returncode == 0


@contextmanager
def server_on_small_disk(size: str) -> Iterator[Replica]:
    """`planledger serve` with its store on a tmpfs of `size` only it sees."""
    where = tempfile.mkdtemp(prefix="planledger-small-disk-")
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="planledger-full-", suffix=".log")  # noqa: SIM115
    process = subprocess.Popen(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f"mount -t tmpfs -o size={size} none {where} && exec {PLANLEDGER} serve "
         f"--db {where}/ledger.sqlite --port {port}"],
        env={**os.environ, "PLANLEDGER_SECRET": SECRET}, stdout=log, stderr=subprocess.STDOUT)
    server = Replica(f"{where}/ledger.sqlite", port, process, log)
    try:
        wait_healthy(server)
        yield server
    finally:
        server.stop()
        os.rmdir(where)


def write(http: httpx.Client, slug: str) -> httpx.Response:
    return http.post("/api/plans", json={"slug": slug, "title": slug,
                                         "steps": [{"title": "s", "body": BODY}]})


def fill(http: httpx.Client) -> int:
    """Write plans until the store refuses one; how many landed."""
    written = 0
    while write(http, f"plan-{written}").status_code == 201:
        written += 1
        if written > 500:
            raise RuntimeError("the disk never filled")
    return written


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far, all its threads, user and system."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu_per_refusal(server: Replica, http: httpx.Client, seconds: float,
                           ) -> tuple[float, int]:
    """The server's CPU seconds per refused write, and how many were refused."""
    before, refused, n = cpu_seconds(server.process.pid), 0, 0
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        refused += write(http, f"cpu-{n}").status_code == 503
        n += 1
    return (cpu_seconds(server.process.pid) - before) / max(refused, 1), refused


def health_latencies(url: str, seconds: float) -> list[float]:
    found = []
    with httpx.Client(base_url=url, timeout=30) as http:
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:
            started = time.perf_counter()
            http.get("/healthz")
            found.append(time.perf_counter() - started)
            time.sleep(0.01)
    return found


def _retry_writes(url: str, headers: dict[str, str], pause: float, stop: "Event",
                  refused: "Queue[list[float]]") -> None:
    """One client writing again as soon as it is refused (a process of its own, so that
    its work does not slow the reads being timed); its refusals' times go out at the end,
    in one message (many small ones would fill the pipe before the parent reads them)."""
    times: list[float] = []
    with httpx.Client(base_url=url, timeout=30, headers=headers) as http:
        n = 0
        while not stop.is_set() or not times:
            started = time.perf_counter()
            answer = write(http, f"more-{os.getpid()}-{n}")
            if answer.status_code == 503:
                times.append(time.perf_counter() - started)
            n += 1
            stop.wait(pause)
    refused.put(times)


def with_writers(url: str, headers: dict[str, str], writers: int, seconds: float,
                 pause: float = 0.0) -> tuple[list[float], list[float]]:
    """`/healthz` latencies while `writers` clients retry refused writes, `pause` seconds
    after each answer; and the refusals' latencies."""
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    refused: Queue[list[float]] = context.Queue()
    processes = [context.Process(target=_retry_writes, args=(url, headers, pause, stop, refused))
                 for _ in range(writers)]
    for process in processes:
        process.start()
    time.sleep(1.0)  # the writers' interpreters start and begin retrying
    try:
        reads = health_latencies(url, seconds)
    finally:
        stop.set()
        found = [t for _ in processes for t in refused.get(timeout=60)]
        for process in processes:
            process.join()
    return reads, found


def _ms(values: list[float], q: float = 0.5) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run(smoke: bool = False) -> list[Figure]:
    if not can_mount():
        print("disk_full: skipped (needs mount namespaces: unshare -m)")
        return []
    seconds = 1.0 if smoke else 5.0
    with server_on_small_disk("600k") as server, \
            httpx.Client(base_url=server.url, timeout=30) as http:
        headers = author_at(server.url)
        http.headers.update(headers)
        fill(http)
        idle = health_latencies(server.url, seconds)
        cpu, cpu_rounds = server_cpu_per_refusal(server, http, seconds)
        one, refused_one = with_writers(server.url, headers, 1, seconds)
        four, refused_four = with_writers(server.url, headers, 4, seconds)
        paced, _ = with_writers(server.url, headers, 4, seconds, pause=PACE)
    idle_p50 = _ms(idle)
    return [
        Figure("refused write, 1 writer (median)", _ms(refused_one), "ms", rounds=len(refused_one)),
        Figure("server CPU per refused write", cpu * 1000, "ms", "refused write (median)",
               _ms(refused_one), rounds=cpu_rounds),
        Figure("refused write, 4 writers (median)", _ms(refused_four), "ms",
               rounds=len(refused_four)),
        Figure("/healthz p50, 1 writer retrying", _ms(one), "ms", "/healthz p50 idle",
               idle_p50, lower_is_better=True, rounds=len(one)),
        Figure("/healthz p50, 4 writers retrying back to back", _ms(four), "ms",
               "/healthz p50 idle", idle_p50, lower_is_better=True, rounds=len(four)),
        Figure(f"/healthz p50, 4 writers retrying every {PACE * 1000:.0f} ms", _ms(paced), "ms",
               "/healthz p50 idle", idle_p50, goal=2.0, lower_is_better=True,
               rounds=len(paced)),
        Figure("/healthz p99, 4 writers retrying", _ms(four, 0.99), "ms", "/healthz p99 idle",
               _ms(idle, 0.99), lower_is_better=True, rounds=len(four)),
    ]
