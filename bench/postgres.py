"""8. PostgreSQL scale-out: claims/s through 1, 2 and 3 `planledger serve` replicas.

Baseline, same run and same database: the `eventsourcing` library's bare insert, one
stored event per transaction (what a claim appends: a StepClaimed encoded by the store's
own mapper), from as many writer threads as there are HTTP clients. Informing, beside it:
the same inserts through our own append (infra.pg_append: one function call the server
commits), the floor of a claim's write. Each claim is one HTTP request on a step nobody
else claims, so the figure is throughput, not contention.

Beside each figure, where the CPU went per operation (replica processes, this process's
HTTP clients, the PostgreSQL backends serving them, found by their PGAPPNAME label), read
from /proc, and the rate the machine's cores would allow at that cost. That says where the
ceiling is. Two limits meet here:

- the database's: every append from every replica takes the log table's EXCLUSIVE lock
  and holds it through its commit (so that notification ids follow commit order and
  tailing readers never skip), so appends are serialized: one WAL flush at a time, no
  group commit. The bare insert rate is that limit (the library's holds the lock across a
  round trip to the client as well; ours does not);
- the cores': a claim costs several times a bare insert in CPU (HTTP, the session token,
  loading session, step and plan with a round trip each, deciding, encoding, the reply).
  When the claims' CPU per op times their rate reaches the cores, adding replicas on the
  same machine adds no throughput; replicas on more machines do, up to the serialized-append
  limit.

    python -m planledger.bench postgres            # or: python -m planledger.bench.postgres
"""

import contextlib
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder

from planledger.bench.scratch_schemas import BASE_URL, postgres_reachable, scratch_schema
from planledger.bench.servers import ROOMY, Agent, Replica, app_name, create_plan, replicas
from planledger.bench.timing import Figure
from planledger.infra.persistence import open_event_store
from planledger.infra.pg_schema import EVENTS_TABLE
from planledger.ledger.domain.events import StepClaimed

CLIENTS = 8
LIBRARY = f"library bare insert, 1 event/txn, {CLIENTS} threads"
OURS = f"our append function, bare, 1 event/txn, {CLIENTS} threads"
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Run:
    """One measured stretch: operations per second and the CPU seconds spent meanwhile."""

    rate: float
    cpu: dict[str, float]


def _process_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def _machine_busy() -> tuple[float, float]:
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values) - idle) / TICKS, sum(values) / TICKS


Pids = Callable[[], dict[str, list[int]]]


def _cpu(pids: dict[str, list[int]]) -> dict[str, dict[int, float]]:
    found: dict[str, dict[int, float]] = {}
    for name, group in pids.items():
        found[name] = {}
        for pid in group:
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                found[name][pid] = _process_cpu(pid)
    return found


def measured(count: int, work: Callable[[], object], pids: Pids) -> Run:
    """Run `work` (doing `count` operations); its rate and the CPU each group of processes
    used, in cores (CPU seconds per second of the run)."""
    before = _cpu(pids())
    busy0, total0 = _machine_busy()
    started = time.perf_counter()
    work()
    elapsed = time.perf_counter() - started
    busy1, total1 = _machine_busy()
    after = _cpu(pids())
    cpu = {name: sum(t - before[name].get(pid, 0.0) for pid, t in group.items()) / elapsed
           for name, group in after.items()}
    cpu["machine busy"] = (busy1 - busy0) / (total1 - total0) * (os.cpu_count() or 1)
    return Run(count / elapsed, cpu)


def backends(url: str, names: Sequence[str]) -> list[int]:
    """PostgreSQL server processes serving connections labelled with one of `names`."""
    with psycopg.connect(BASE_URL, autocommit=True) as conn:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = ANY(%s)",
                            (list(names),)).fetchall()
    return [int(row[0]) for row in rows]


def bare_inserts(url: str, count: int, writers: int, library: bool) -> Run:
    """Inserts, one event per transaction, from `writers` threads: by the library's own
    recorder (`library`), or by the store's (our append function)."""
    label = f"planledger-bench-{os.getpid()}"
    os.environ["PGAPPNAME"] = label  # labels this store's connections in pg_stat_activity
    store = open_event_store(url)
    recorder = store.recorder
    if library:
        recorder = PostgresApplicationRecorder(store.recorder.datastore,  # type: ignore[attr-defined]
                                               events_table_name=EVENTS_TABLE)
    try:
        now, run_id = datetime.now(UTC), uuid.uuid4().hex[:8]
        # Each writer one stream, version after version: the append checks each event's
        # predecessor (infra.pg_append), as it does a step's grant after its opening.
        batches = [[store.mapper.to_stored_event(StepClaimed(
            f"bare-{run_id}-{w}", i + 1, timestamp=now, session_id="01KXP8FEJQ6R5Z5NMVZ7082X5A",
            fence=1, lease_seconds=900, expires_at=now)) for i in range(count // writers)]
            for w in range(writers)]

        def insert(batch: list[StoredEvent]) -> None:
            for stored in batch:
                recorder.insert_events([stored])

        def work() -> None:
            with ThreadPoolExecutor(writers) as pool:
                list(pool.map(insert, batches))

        insert([])  # open the pool before measuring
        return measured(count // writers * writers, work, lambda: {
            "bench process": [os.getpid()], "postgres": backends(url, [label])})
    finally:
        store.close()
        del os.environ["PGAPPNAME"]


def http_claims(cluster: Sequence[Replica], count: int, slug: str) -> Run:
    """`count` claims, each on its own step, by CLIENTS clients spread over `cluster`."""
    steps = create_plan(cluster[0], slug, [{"title": f"step {i}"} for i in range(count)])
    agents = [Agent(cluster[i % len(cluster)], f"bench-{i}") for i in range(CLIENTS)]
    shares = [steps[i::CLIENTS] for i in range(CLIENTS)]
    barrier = threading.Barrier(CLIENTS)

    def claim_all(agent: Agent, share: list[str]) -> None:
        barrier.wait()
        for step_id in share:
            response = agent.claim(step_id)
            assert response.status_code == 200, response.text

    def work() -> None:
        with ThreadPoolExecutor(CLIENTS) as pool:
            list(pool.map(claim_all, agents, shares))

    def pids() -> dict[str, list[int]]:
        return {"replicas": [r.process.pid for r in cluster], "bench process": [os.getpid()],
                "postgres": backends(cluster[0].db, [app_name(r.port) for r in cluster])}

    try:
        return measured(count, work, pids)
    finally:
        for agent in agents:
            agent.close()


def _per_op(runs: list[Run]) -> dict[str, float]:
    """Median CPU milliseconds per operation for each group of processes."""
    return {k: statistics.median(r.cpu[k] / r.rate * 1000 for r in runs) for k in runs[0].cpu}


def _explain(label: str, runs: list[Run]) -> str:
    """Where the CPU went per operation, and the rate 2 cores would allow at that cost."""
    per_op = _per_op(runs)
    ours = sum(v for k, v in per_op.items() if k != "machine busy")
    cores = os.cpu_count() or 1
    parts = ", ".join(f"{k} {v:.2f}" for k, v in per_op.items() if k != "machine busy")
    return (f"{label}: {statistics.median(r.rate for r in runs):,.0f}/s; CPU ms per op: "
            f"{parts} (sum {ours:.2f}: {cores} cores allow {cores * 1000 / ours:,.0f}/s); "
            f"machine busy {statistics.median(r.cpu['machine busy'] for r in runs):.2f} cores")


def run(smoke: bool = False) -> list[Figure]:
    if not postgres_reachable():
        print("bench postgres: PostgreSQL is not reachable; skipped")
        return []
    count, rounds, sizes = (40, 1, (1,)) if smoke else (600, 3, (1, 2, 3))
    claims: dict[int, list[Run]] = {n: [] for n in sizes}
    bare: dict[str, list[Run]] = {LIBRARY: [], OURS: []}
    with scratch_schema() as url, replicas(url, max(sizes), ROOMY) as cluster:
        for r in range(rounds):
            for name, runs in bare.items():
                runs.append(bare_inserts(url, count, CLIENTS, library=name == LIBRARY))
            for n in sizes:
                claims[n].append(http_claims(cluster[:n], count, f"bench-{r}-{n}"))
    for name, runs in bare.items():
        print(_explain(f"bench postgres: {name}", runs))
    figures = []
    for n in sizes:
        print(_explain(f"bench postgres: claims, {n} replica(s)", claims[n]))
        rate = statistics.median(c.rate for c in claims[n])
        figures += [Figure(f"claims/s, {n} replica(s), {CLIENTS} HTTP clients", rate,
                           "claims/s", name, statistics.median(b.rate for b in runs),
                           rounds=rounds) for name, runs in bare.items()]
    return figures


if __name__ == "__main__":
    from planledger.bench.table import rows, table

    print(table(rows("postgres", run())))
