"""One of two replicas stopped with SIGTERM under load, as a deploy or a service manager
stops it: claims, heartbeats, completions and waiting claim-next calls are on it.

It answers its waiters at once (`all_held`: nothing was freed), lets the requests in
flight finish, saves its read model's checkpoint and exits 0, well inside the shutdown
bound. Clients that lose it retry on the other replica, with the same Idempotency-Key, and
see nothing but answers and retryable refusals. No acknowledged write is lost, and the
replica started again resumes from its checkpoint and answers as the other one does.
"""

import re
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx
import pytest

from planledger.api.http.server import SHUTDOWN_SECONDS
from planledger.api.runtime import open_checkpoints
from planledger.bench.servers import Agent, Replica, create_plan, replicas, start_replica
from planledger.ledger.domain import events as ev
from tests.integration.test_postgres_replicas import read_log
from tests.support.postgres import fresh_schema

STEPS = 300
WORKERS = 6
WAITERS = 2
TIMEOUT = 60.0
RETRYABLE = {503}


@dataclass
class Seen:
    """What the clients were told: acknowledged writes, and any answer that is neither an
    acknowledgement, a bounce of the race, nor retryable."""

    claims: list[tuple[int, str, str, int]] = field(default_factory=list)
    completions: list[tuple[int, str, str]] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def acknowledged_by(self, port: int) -> int:
        with self.lock:
            return sum(1 for c in self.completions if c[0] == port)


class Worker:
    """One agent's session, on the victim until it stops answering, then on the other."""

    def __init__(self, victim: Replica, other: Replica, name: str) -> None:
        self.agent, self.other = Agent(victim, name), other

    def send(self, seen: Seen, path: str, body: dict[str, int] | None = None,
             ) -> httpx.Response | None:
        """The POST's answer, retried on the other replica while the victim is stopping:
        None if no answer came (noted in `seen`)."""
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                answer = self.agent.http.post(path, json=body, headers=headers)
            except httpx.TransportError:
                answer = None
            if answer is not None and answer.status_code not in RETRYABLE:
                return answer
            if self.agent.replica is not self.other:
                self.agent = self.agent.on(self.other)
        with seen.lock:
            seen.unexpected.append("no answer within the deadline")
        return None

    def work(self, seen: Seen, stop: threading.Event) -> None:
        while not stop.is_set():
            granted = self.send(seen, "/api/plans/load/claim-next")
            claimed = granted.json().get("claimed") if _ok(granted, seen) else None
            if claimed is None:
                continue
            step, fence = claimed["step_id"], claimed["fence"]
            port = self.agent.replica.port
            with seen.lock:
                seen.claims.append((port, step, self.agent.session_id, fence))
            beat = self.send(seen, f"/api/steps/{step}/claim")  # a heartbeat
            if not _ok(beat, seen):
                continue
            done = self.send(seen, f"/api/steps/{step}/complete", {"fence": fence})
            if _ok(done, seen):
                with seen.lock:
                    seen.completions.append((self.agent.replica.port, step,
                                             self.agent.session_id))


def _ok(answer: httpx.Response | None, seen: Seen) -> bool:
    if answer is None:
        return False
    if answer.status_code == 200:
        return True
    with seen.lock:
        seen.unexpected.append(f"{answer.status_code} {answer.text[:200]}")
    return False


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():  # polling with a deadline: waiting on the load to progress
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _in_flight(replica: Replica) -> float:
    metrics = httpx.get(f"{replica.url}/metrics", timeout=10).text
    found = re.search(r"^planledger_requests_in_flight (\S+)$", metrics, re.MULTILINE)
    assert found, "the in-flight gauge"
    return float(found.group(1))


def _wait(agent: Agent, answers: list[httpx.Response | str]) -> None:
    try:
        answers.append(agent.http.post("/api/plans/held/claim-next",
                                       json={"wait_seconds": 300}, timeout=TIMEOUT * 2))
    except httpx.TransportError as error:
        answers.append(repr(error))


@pytest.mark.timeout(600)
def test_a_replica_stopped_under_load_answers_its_waiters_saves_and_exits_0() -> None:
    with fresh_schema() as url, replicas(url, 2) as (victim, other):
        create_plan(victim, "load", [{"title": f"step {i}"} for i in range(STEPS)])
        (held,) = create_plan(victim, "held", [{"title": "held elsewhere"}])
        holder = Agent(other, "holder")
        assert holder.claim(held).status_code == 200
        workers = [Worker(victim, other, f"w{i}") for i in range(WORKERS)]
        waiters, answers = [Agent(victim, f"waiter{i}") for i in range(WAITERS)], []
        seen, stop = Seen(), threading.Event()
        with ThreadPoolExecutor(WORKERS + WAITERS) as pool:
            waits = [pool.submit(_wait, waiter, answers) for waiter in waiters]
            loads = [pool.submit(worker.work, seen, stop) for worker in workers]
            try:
                _until(lambda: _in_flight(victim) >= WAITERS + 1, "the waiters to wait")
                _until(lambda: seen.acknowledged_by(victim.port) >= 10, "load on the victim")
                began = time.monotonic()
                victim.process.terminate()
                code = victim.process.wait(TIMEOUT)
                took = time.monotonic() - began
                for wait in waits:
                    wait.result(TIMEOUT)
                before = seen.acknowledged_by(other.port)
                _until(lambda: seen.acknowledged_by(other.port) >= before + 10,
                       "the load to go on on the other replica")
            finally:
                stop.set()
            for load in loads:
                load.result(TIMEOUT)

        assert code == 0, victim.output()
        assert took < SHUTDOWN_SECONDS, f"stopping took {took:.1f} s"
        for answer in answers:  # answered at once, as their deadline would have
            assert isinstance(answer, httpx.Response), answer
            assert answer.status_code == 200 and answer.json()["reason"] == "all_held"
        assert seen.unexpected == []
        log = read_log(url)
        _check_every_acknowledged_write_is_logged(log, seen)
        _check_the_checkpoint_holds_what_the_victim_acknowledged(url, log, seen, victim.port)
        restarted = start_replica(url)
        try:
            _until(lambda: _progress(restarted) == _progress(other), "the replicas to agree")
        finally:
            restarted.stop()
        holder.close()


def _check_every_acknowledged_write_is_logged(log: list[tuple[int, ev.LedgerEvent]],
                                              seen: Seen) -> None:
    claims = {(e.originator_id, e.session_id, e.fence) for _, e in log
              if isinstance(e, ev.StepClaimed)}
    completions = {(e.originator_id, e.session_id) for _, e in log
                   if isinstance(e, ev.StepCompleted)}
    for _, step, session, fence in seen.claims:
        assert (step, session, fence) in claims, f"acknowledged claim of {step} not logged"
    for _, step, session in seen.completions:
        assert (step, session) in completions, f"acknowledged completion of {step} not logged"


def _check_the_checkpoint_holds_what_the_victim_acknowledged(
    url: str, log: list[tuple[int, ev.LedgerEvent]], seen: Seen, victim: int,
) -> None:
    acknowledged = {(step, session) for port, step, session in seen.completions
                    if port == victim}
    last = max(position for position, e in log if isinstance(e, ev.StepCompleted)
               and (e.originator_id, e.session_id) in acknowledged)
    checkpoints = open_checkpoints(url)
    try:
        saved = checkpoints.load_checkpoint("planledger")
    finally:
        checkpoints.close()
    assert saved is not None and saved[0] >= last  # saved as it stopped, not before


def _progress(replica: Replica) -> dict[str, int]:
    return dict(httpx.get(f"{replica.url}/api/plans/load", timeout=30).json()["progress"])
