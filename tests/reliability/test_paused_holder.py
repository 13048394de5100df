"""A holder paused (SIGSTOP) past its lease while another agent claims the step: resumed
(SIGCONT), its completion carries a stale fence and is refused; the other agent completes;
the log holds exactly one completion."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from planledger.api.runtime import open_runtime
from planledger.ledger.domain import events as ev
from tests.reliability.conftest import Served

DEADLINE = 30.0
ROOT = Path(__file__).parents[2]


def _until_claimable(url: str, step: str) -> None:
    """Poll (with a deadline) until the paused holder's lease has lapsed on the server."""
    deadline = time.monotonic() + DEADLINE
    while not httpx.get(f"{url}/api/steps/{step}", timeout=10).json()["claimable"]:
        assert time.monotonic() < deadline, "the paused holder's lease never lapsed"
        time.sleep(0.05)


def test_a_paused_holder_cannot_complete_after_another_took_the_step(served: Served) -> None:
    (step,) = served.plan("paused-holder", 1)
    agent = subprocess.Popen([sys.executable, "-m", "tests.reliability.paused_agent",
                              served.url, step], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=ROOT)
    assert agent.stdin is not None and agent.stdout is not None
    try:
        paused = json.loads(agent.stdout.readline())
        agent.send_signal(signal.SIGSTOP)
        agent.stdin.write("go on\n")  # waits in the pipe until the process runs again
        agent.stdin.flush()
        _until_claimable(served.url, step)
        other, client = served.session("the other agent")
        took = client.post(f"/api/steps/{step}/claim", json={"lease_seconds": 60}).json()
        assert took["fence"] == paused["fence"] + 1
        assert took["took_over_from"] == paused["session"]

        agent.send_signal(signal.SIGCONT)
        answers = json.loads(agent.stdout.readline())
        assert client.post(f"/api/steps/{step}/complete",
                           json={"fence": took["fence"]}).status_code == 200
    finally:
        agent.kill()
        agent.wait(10)

    status, refused = answers["complete"]
    assert status == 409 and refused["reason"] == "stale_fence"
    assert refused["current_fence"] == took["fence"] and refused["holder"] == other
    assert answers["heartbeat"][0] == 409 and answers["heartbeat"][1]["reason"] == "not_holder"
    _exactly_one_completion(served.db, step, other, took["fence"], paused["session"])


def _exactly_one_completion(db: str, step: str, by: str, fence: int, stale: str) -> None:
    runtime = open_runtime(db)
    try:
        events = list(runtime.store.stream(step))
        done = [e for e in events if isinstance(e, ev.StepCompleted)]
        assert [(e.session_id, e.fence) for e in done] == [(by, fence)]
        rejected = [e for e in runtime.store.stream(stale)
                    if isinstance(e, ev.StaleFenceRejected)]
        assert [(r.step_id, r.fence, r.current_fence) for r in rejected] == [
            (step, fence - 1, fence)]
    finally:
        runtime.close()
