"""A replica killed with SIGKILL under load: every write it acknowledged is in the log, the
other replicas keep serving, and a replica started afterwards catches up with the log."""

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx
import pytest

from planledger.bench.servers import Agent, Replica, create_plan, replicas, start_replica
from planledger.ledger.domain import events as ev
from tests.integration.test_postgres_replicas import read_log
from tests.support.postgres import fresh_schema

STEPS = 500
WORKERS_PER_REPLICA = 2
TIMEOUT = 60.0


@dataclass
class Acks:
    """Writes the clients saw acknowledged (a 200 fully received), per replica port."""

    claims: list[tuple[int, str, str, int]] = field(default_factory=list)
    completions: list[tuple[int, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, port: int) -> int:
        with self.lock:
            return sum(1 for c in self.completions if c[0] == port)


def _load(agent: Agent, acks: Acks, stop: threading.Event) -> None:
    """Claim-next and complete until stopped, or until this client's replica is gone."""
    port = agent.replica.port
    while not stop.is_set():
        try:
            answer = agent.claim_next("load")
            claimed = answer.json()["claimed"] if answer.status_code == 200 else None
            if claimed is None:
                continue
            with acks.lock:
                acks.claims.append((port, claimed["step_id"], agent.session_id,
                                    claimed["fence"]))
            if agent.complete(claimed["step_id"], claimed["fence"]).status_code == 200:
                with acks.lock:
                    acks.completions.append((port, claimed["step_id"], agent.session_id))
        except httpx.TransportError:
            if agent.replica.process.poll() is not None:
                return  # killed: whatever was in flight was never acknowledged


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():  # polling with a deadline: waiting on the load to progress
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.slow
def test_replica_killed_under_load_loses_no_acknowledged_write_and_a_new_one_catches_up() -> None:
    with fresh_schema() as url, replicas(url, 3) as cluster:
        create_plan(cluster[0], "load", [{"title": f"step {i}"} for i in range(STEPS)])
        agents = [Agent(r, f"w{i}-{r.port}") for r in cluster for i in range(WORKERS_PER_REPLICA)]
        acks, stop = Acks(), threading.Event()
        with ThreadPoolExecutor(len(agents)) as pool:
            loads = [pool.submit(_load, agent, acks, stop) for agent in agents]
            try:
                fresh = _kill_one_and_start_another(cluster, acks)
            finally:
                stop.set()
            for done in loads:
                done.result(TIMEOUT)
        for agent in agents:
            agent.close()
        try:
            _check_acknowledged_writes_are_logged(url, acks, killed=cluster[0].port)
            _check_caught_up(fresh, url)
        finally:
            fresh.stop()


def _kill_one_and_start_another(cluster: Sequence[Replica], acks: Acks) -> Replica:
    victim, survivors = cluster[0], cluster[1:]
    _until(lambda: acks.count(victim.port) >= 10, "load on the victim")
    victim.kill()
    before = {r.port: acks.count(r.port) for r in survivors}
    _until(lambda: all(acks.count(r.port) >= before[r.port] + 10 for r in survivors),
           "the surviving replicas to keep serving")
    return start_replica(victim.db)  # while the load goes on


def _check_acknowledged_writes_are_logged(url: str, acks: Acks, killed: int) -> None:
    log = [event for _, event in read_log(url)]
    claims = {(e.originator_id, e.session_id, e.fence) for e in log
              if isinstance(e, ev.StepClaimed)}
    completions = {(e.originator_id, e.session_id) for e in log
                   if isinstance(e, ev.StepCompleted)}
    assert any(port == killed for port, *_ in acks.claims)
    for _, step, session, fence in acks.claims:
        assert (step, session, fence) in claims, f"acknowledged claim of {step} not logged"
    for _, step, session in acks.completions:
        assert (step, session) in completions, f"acknowledged completion of {step} not logged"


def _check_caught_up(fresh: Replica, url: str) -> None:
    """The new replica's read model folds the whole log: its progress matches the log's."""
    log = [event for _, event in read_log(url)]
    done = {e.originator_id for e in log if isinstance(e, ev.StepCompleted)}
    claimed = {e.originator_id for e in log if isinstance(e, ev.StepClaimed)}
    progress = httpx.get(f"{fresh.url}/api/plans/load", timeout=30).json()["progress"]
    assert (progress["done"], progress["in_flight"]) == (len(done), len(claimed - done))
    assert progress["claimable"] == STEPS - len(claimed)
