"""A claim that finds SQLite's write lock held by another process waits for it on the
thread pool while the server goes on answering (`planledger serve`, real uvicorn)."""

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from planledger.bench.servers import Agent, create_plan, start_replica
from tests.support.sqlite_lock import write_lock_held


def _in_flight(url: str) -> float:
    metrics = httpx.get(f"{url}/metrics", timeout=10).text
    found = re.search(r"^planledger_requests_in_flight (\S+)$", metrics, re.MULTILINE)
    assert found, metrics
    return float(found.group(1))


def test_a_claim_waiting_for_another_process_stalls_no_other_request(tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.sqlite")
    server = start_replica(db)
    agent = Agent(server, "a")
    try:
        (step,) = create_plan(server, "p", [{"title": "job"}])
        with ThreadPoolExecutor(1) as pool, write_lock_held(db):
            claim = pool.submit(agent.claim, step)
            deadline = time.monotonic() + 20
            # The claim and this /metrics call both in flight: the server answered while
            # the claim waited (a claim waiting on the event loop would answer first).
            while _in_flight(server.url) < 2:  # polling with a deadline, not a sleep
                assert not claim.done(), claim.result().text
                assert time.monotonic() < deadline, "the claim never showed as in flight"
            ready = httpx.get(f"{server.url}/api/plans/p/ready", timeout=10)
            assert ready.status_code == 200
            assert not claim.done()
        answer = claim.result(30)
        assert answer.status_code == 200, answer.text
        assert answer.json()["holder"] == agent.session_id
    finally:
        agent.close()
        server.stop()
