"""What many console streams cost: claims while 1,000 clients ask for a stream, and the
bytes a stream resuming from position 0 is sent.

One `planledger serve` (default settings: it follows at most 100 streams) on a log of one
plan of 14,000 steps (14,000 events). Figures: the claim p50 and p99 while 1,000 stream
clients have asked at once (the server holds 100, the rest were answered 503), against the
same with no stream; and the bytes each of 20 clients resuming from position 0 is sent in
3 s, against the bytes of the log they asked to resume over (`/api/log`, page by page).
Measured before the cap and the resync (issue 28): 1,000 streams took the claim p99 from
14 to 287 ms; 20 resuming clients were sent 2.3 GB in 15 s.
"""

import asyncio
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx

from planledger.bench.console import build, claim_times, ready_ids
from planledger.bench.servers import ROOMY, Agent, Replica, start_replica
from planledger.bench.timing import Figure, scratch_dir

CLIENTS = 1_000
RESUMING = 20
RESUME_SECONDS = 3.0


@dataclass
class Streams:
    """What a crowd of raw stream clients saw: answers by status, bytes each was sent."""

    statuses: Counter[str] = field(default_factory=Counter)
    received: list[int] = field(default_factory=list)


async def _one(port: int, headers: str, seen: Streams) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    total = 0
    try:
        writer.write(f"GET /api/console/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                     f"Connection: close\r\n{headers}\r\n".encode())
        status = await reader.readline()
        seen.statuses[status.split(b" ")[1].decode() if b" " in status else "none"] += 1
        while chunk := await reader.read(65536):
            total += len(chunk)
    finally:
        seen.received.append(total)
        writer.close()


async def _crowd(port: int, count: int, headers: str, seen: Streams,
                 answered: threading.Event, stop: asyncio.Event) -> None:
    tasks = [asyncio.create_task(_one(port, headers, seen)) for _ in range(count)]
    while sum(seen.statuses.values()) < count and not stop.is_set():
        await asyncio.sleep(0.01)  # the crowd's own progress, polled; no result hangs on it
    answered.set()
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@contextmanager
def crowd(server: Replica, count: int, headers: str = "") -> Iterator[Streams]:
    """`count` stream clients asking at once, held open until the block ends; yields once
    every one was answered."""
    seen, answered = Streams(), threading.Event()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    port = int(server.url.rsplit(":", 1)[1])
    thread = threading.Thread(target=loop.run_until_complete, daemon=True,
                              args=(_crowd(port, count, headers, seen, answered, stop),))
    thread.start()
    answered.wait(120)
    try:
        yield seen
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(60)
        loop.close()


def _log_bytes(server: Replica) -> int:
    total, after = 0, 0
    with httpx.Client(base_url=server.url, timeout=60) as http:
        while True:
            page = http.get("/api/log", params={"after": after, "limit": 1000})
            total += len(page.content)
            if not page.json()["more"]:
                return total
            after = page.json()["next_after"]


def run(smoke: bool = False) -> list[Figure]:
    steps, claims = (2_000, 10) if smoke else (14_000, 60)
    clients = 200 if smoke else CLIENTS
    ms, mib = 1000, 1 / 2**20
    with scratch_dir("console-streams") as directory:
        build(directory / "log.sqlite", steps)
        server = start_replica(str(directory / "log.sqlite"), ROOMY)
        try:
            agent = Agent(server, "claimer")
            ready = ready_ids(server)
            claim_times(agent, ready, 3)  # warm: connection, session, caches
            alone = claim_times(agent, ready, claims)
            with crowd(server, clients) as held:
                crowded = claim_times(agent, ready, claims)
            log_size = _log_bytes(server)
            with crowd(server, RESUMING, "Last-Event-ID: 0\r\n") as resumed:
                time.sleep(RESUME_SECONDS)  # the measured span itself
            agent.close()
        finally:
            server.stop()
    admitted = held.statuses.get("200", 0)
    p99 = statistics.quantiles(alone, n=100)[98] * ms
    return [
        Figure(f"claim p50, {clients:,} stream clients asking ({admitted} held, "
               f"{held.statuses.get('503', 0)} refused)", statistics.median(crowded) * ms,
               "ms", "claim p50, no stream", statistics.median(alone) * ms,
               lower_is_better=True, rounds=claims),
        Figure(f"claim p99, {clients:,} stream clients asking",
               statistics.quantiles(crowded, n=100)[98] * ms, "ms", "claim p99, no stream",
               p99, lower_is_better=True, rounds=claims),
        Figure(f"bytes sent to each of {RESUMING} streams resuming from 0 in "
               f"{RESUME_SECONDS:g} s", max(resumed.received) * mib, "MiB",
               f"the {steps:,}-event log it resumed over", log_size * mib,
               lower_is_better=True, rounds=RESUMING),
    ]
