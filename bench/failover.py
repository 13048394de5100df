"""A PostgreSQL primary that dies under load: what acknowledged writes are lost, and how
long until the ledger serves again.

Two `planledger serve` replicas run on a primary and its streaming standby
(bench/pg_standby.py), each with the multi-host `--db` that names both
(`target_session_attrs=read-write`). Six agents start sessions, then claim the next step,
heartbeat it and complete it, until every step of the plan is done; each write carries an
Idempotency-Key and is retried with it while the answer is retryable (503 with
Retry-After, a broken connection). Midway the primary is killed (`pg_ctl stop -m
immediate`) and the standby promoted. Figures for each setting, synchronous and
asynchronous replication (the asynchronous standby's WAL 200 ms late, as on a slow link):
the acknowledged writes (a 2xx answer), those of them missing from the promoted
database's log, and the time to serve again (the first write acknowledged after the kill,
less the moment of the kill). They inform; the tests judge
(tests/reliability/test_postgres_failover.py).
"""

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx

from planledger.bench.pg_standby import PgBinariesMissing, PgPair, pg_bin, pg_pair
from planledger.bench.servers import ROOMY, Replica, create_plan, replicas
from planledger.bench.timing import Figure
from planledger.infra.persistence import open_event_store
from planledger.ledger.domain import events as ev

AGENTS = 6
STEPS = 150
KILL_AFTER = 40  # acknowledged completions before the primary is killed
WAL_DELAY = 0.2  # seconds the asynchronous standby's WAL is late
DEADLINE = 60.0  # seconds for the work to finish after the kill, and for any one write
RETRY_PAUSE = 0.05  # a client honouring Retry-After, shortened
PLAN = "failover"
# A short connect timeout: a replica's 503 answer comes within it (plus one second), and a
# host that does not answer is given up on as soon.
CONNECT_TIMEOUT = 3


@dataclass(frozen=True)
class Ack:
    """A write the client was told succeeded (2xx): what it was, when it was sent (the
    attempt that was answered) and when the answer came."""

    kind: str  # session | claim | heartbeat | complete
    step: str | None
    session: str
    fence: int | None
    sent: float
    answered: float


@dataclass(frozen=True)
class Refusal:
    """A write refused with a 4xx answer that is the ledger's verdict, not a fault."""

    kind: str
    step: str
    session: str
    fence: int
    status: int
    reason: str
    message: str


@dataclass
class Record:
    """Everything the clients were told, and when the primary was killed."""

    acks: list[Ack] = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    retried: int = 0
    empty_handed: Counter[str] = field(default_factory=Counter)  # claim-next's reasons
    killed_at: float = 0.0  # when the kill was ordered
    dead_at: float = 0.0  # when the primary was certainly down
    promoted_at: float = 0.0
    work_until: float = float("inf")  # when the agents give up: set at the kill
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, item: Ack | Refusal | str) -> None:
        with self.lock:
            if isinstance(item, Ack):
                self.acks.append(item)
            elif isinstance(item, Refusal):
                self.refusals.append(item)
            else:
                self.unexpected.append(item)

    def completions(self) -> int:
        with self.lock:
            return sum(1 for a in self.acks if a.kind == "complete")

    def time_to_serve_again(self) -> float | None:
        """Seconds from the kill to the first write acknowledged after it."""
        after = [a.answered for a in self.acks if a.sent > self.dead_at]
        return min(after) - self.killed_at if after else None


class Worker:
    """One agent's session; it moves to the other replica when its own does not answer."""

    def __init__(self, servers: Sequence[Replica], index: int, record: Record) -> None:
        self.servers, self.index, self.record = servers, index, record
        self.sent = 0.0  # when the last attempt of a write was sent
        self.http = httpx.Client(base_url=servers[index % len(servers)].url, timeout=30)
        started = self.post("session", None, None, "/api/sessions", {"name": f"agent-{index}"})
        if started is None or started.status_code != 201:
            raise RuntimeError(f"agent {index} could not start a session")
        self.session = str(started.json()["session_id"])
        self.http.headers["Authorization"] = f"Bearer {started.json()['token']}"
        self.record.add(Ack("session", None, self.session, None, self.sent, time.monotonic()))

    def post(self, kind: str, step: str | None, fence: int | None, path: str,
             body: dict[str, object] | None = None) -> httpx.Response | None:
        """The write's final answer, retried with one Idempotency-Key while retryable;
        None (noted as unexpected) when no final answer came within the deadline."""
        key = {"Idempotency-Key": str(uuid.uuid4())}
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            self.sent = time.monotonic()
            try:
                answer = self.http.post(path, json=body, headers=key)
            except httpx.TransportError:
                self._move()
            else:
                if answer.status_code != 503 or "Retry-After" not in answer.headers:
                    return answer
            with self.record.lock:
                self.record.retried += 1
            time.sleep(RETRY_PAUSE)
        self.record.add(f"{kind} {step}: no final answer within {DEADLINE:.0f} s")
        return None

    def _move(self) -> None:
        self.index += 1
        self.http.base_url = httpx.URL(self.servers[self.index % len(self.servers)].url)

    def work(self) -> None:
        """Claim, heartbeat and complete steps until the plan is done (or the record's
        `work_until`)."""
        while time.monotonic() < self.record.work_until:
            got = self.post("claim", None, None, f"/api/plans/{PLAN}/claim-next")
            if got is None or not self._accepted("claim", "", 0, got):
                continue
            claimed = got.json()["claimed"]
            if claimed is None:
                with self.record.lock:
                    self.record.empty_handed[str(got.json()["reason"])] += 1
                if got.json()["reason"] == "all_done":
                    return
                time.sleep(RETRY_PAUSE)  # every ready step is held: back off a moment
                continue
            step, fence = str(claimed["step_id"]), int(claimed["fence"])
            self.record.add(Ack("claim", step, self.session, fence, self.sent, time.monotonic()))
            holding: list[tuple[str, str, dict[str, object] | None]] = [
                ("heartbeat", f"/api/steps/{step}/heartbeat", None),
                ("complete", f"/api/steps/{step}/complete", {"fence": fence})]
            for kind, path, body in holding:
                answer = self.post(kind, step, fence, path, body)
                if answer is None or not self._accepted(kind, step, fence, answer):
                    break
                self.record.add(Ack(kind, step, self.session, fence, self.sent,
                                    time.monotonic()))
        self.record.add(f"agent {self.session}: the plan was not done by the deadline")

    def _accepted(self, kind: str, step: str, fence: int, answer: httpx.Response) -> bool:
        if answer.is_success:
            return True
        body = answer.json() if answer.headers.get("content-type") == "application/json" \
            else {}
        if answer.status_code == 409 and kind != "claim":
            self.record.add(Refusal(kind, step, self.session, fence, answer.status_code,
                                    str(body.get("reason")), str(body.get("message"))))
        else:
            self.record.add(f"{kind} {step}: {answer.status_code} {answer.text[:300]}")
        return False

    def close(self) -> None:
        self.http.close()


def read_log(db: str) -> list[tuple[int, ev.LedgerEvent]]:
    """The store's whole log: (position, event), in order."""
    store = open_event_store(db)
    try:
        notes = store.recorder.select_notifications(start=1, limit=10**7)
        return [(n.id, store.mapper.to_domain_event(n)) for n in notes]  # type: ignore[misc]
    finally:
        store.close()


Written = tuple[str, str | None, str, int | None]  # an Ack's kind, step, session and fence


def logged(log: Sequence[tuple[int, ev.LedgerEvent]]) -> set[Written]:
    """What acknowledged writes leave in the log, as (kind, step, session, fence)."""
    found: set[Written] = set()
    for _, event in log:
        if isinstance(event, ev.SessionStarted):
            found.add(("session", None, event.originator_id, None))
        elif isinstance(event, ev.StepClaimed) and event.session_id:
            found.add(("claim", event.originator_id, event.session_id, event.fence))
        elif isinstance(event, ev.LeaseRenewed) and event.session_id:
            found.add(("heartbeat", event.originator_id, event.session_id, event.fence))
        elif isinstance(event, ev.StepCompleted) and event.session_id:
            found.add(("complete", event.originator_id, event.session_id, event.fence))
    return found


def lost(record: Record, log: Sequence[tuple[int, ev.LedgerEvent]]) -> list[Ack]:
    """The acknowledged writes the log does not hold."""
    held = logged(log)
    return [a for a in record.acks if (a.kind, a.step, a.session, a.fence) not in held]


def served_after_loss(record: Record, missing: Sequence[Ack]) -> list[Ack]:
    """Heartbeats and completions acknowledged after the kill to a holder whose grant the
    promoted log lost: the ledger should have refused each (the grant is not its own)."""
    lost_grants = {(a.step, a.session, a.fence) for a in missing if a.kind == "claim"}
    return [a for a in record.acks if a.kind in ("heartbeat", "complete")
            and a.sent > record.dead_at and (a.step, a.session, a.fence) in lost_grants]


def fail_over(pair: PgPair, servers: Sequence[Replica], *,
              on_promoted: Callable[[], None] = lambda: None) -> Record:
    """Work the plan with AGENTS agents over `servers`; kill the primary and promote the
    standby after KILL_AFTER completions; return once the agents stop."""
    record = Record()
    workers = [Worker(servers, i, record) for i in range(AGENTS)]
    try:
        with ThreadPoolExecutor(AGENTS) as pool:
            loads = [pool.submit(worker.work) for worker in workers]
            deadline = time.monotonic() + DEADLINE
            while record.completions() < KILL_AFTER:  # waiting on the load's progress
                if time.monotonic() > deadline or all(load.done() for load in loads):
                    raise RuntimeError(f"no {KILL_AFTER} completions: {record.unexpected}")
                time.sleep(0.01)
            record.killed_at = time.monotonic()
            pair.kill_primary()
            record.dead_at = time.monotonic()
            pair.promote()
            record.promoted_at = time.monotonic()
            record.work_until = time.monotonic() + DEADLINE
            on_promoted()
            for load in loads:
                load.result(2 * DEADLINE)
    finally:
        for worker in workers:
            worker.close()
    return record


def measure(*, synchronous: bool, steps: int = STEPS,
            ) -> tuple[Record, list[tuple[int, ev.LedgerEvent]]]:
    """One failover on a fresh pair: what the clients were told, and the promoted log."""
    with pg_pair(synchronous=synchronous, wal_delay=0.0 if synchronous else WAL_DELAY) as pair:
        url = f"{pair.url}&connect_timeout={CONNECT_TIMEOUT}"
        with replicas(url, 2, ROOMY) as servers:
            create_plan(servers[0], PLAN, [{"title": f"step {i}"} for i in range(steps)])
            record = fail_over(pair, servers)
        return record, read_log(url)


def run(smoke: bool = False) -> list[Figure]:
    try:
        pg_bin()
    except PgBinariesMissing as missing:
        print(f"failover: skipped ({missing})")
        return []
    figures = []
    # A smoke run checks that the benchmark runs: the synchronous setting, on a small plan.
    for synchronous in (True,) if smoke else (True, False):
        setting = ("synchronous" if synchronous
                   else f"asynchronous, WAL {WAL_DELAY * 1000:.0f} ms late")
        record, log = measure(synchronous=synchronous,
                              steps=KILL_AFTER * 2 if smoke else STEPS)
        again = record.time_to_serve_again()
        if again is None:
            raise RuntimeError(f"{setting}: no write was acknowledged after the kill: "
                               f"{record.unexpected[:5]}")
        figures += [
            Figure(f"{setting}: acknowledged writes", len(record.acks), "writes"),
            Figure(f"{setting}: acknowledged writes lost", len(lost(record, log)), "writes"),
            Figure(f"{setting}: time to serve again after the kill", again * 1000, "ms"),
            Figure(f"{setting}: holders refused at heartbeat or completion",
                   len(record.refusals), "writes"),
            Figure(f"{setting}: writes served to a holder whose grant was lost",
                   len(served_after_loss(record, lost(record, log))), "writes"),
            Figure(f"{setting}: steps not done when the agents stopped",
                   len(not_done(log)), "steps"),
        ]
    return figures


def not_done(log: Sequence[tuple[int, ev.LedgerEvent]]) -> set[str]:
    """The plan's steps that the log holds no completion of."""
    steps = {e.step_id for _, e in log if isinstance(e, ev.StepAdded)}
    return steps - {e.originator_id for _, e in log if isinstance(e, ev.StepCompleted)}
