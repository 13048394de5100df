"""`planledger claim-next PLAN --wait SECONDS` as a real process: against a server it
waits for the step a release frees and claims it; on the embedded store time up exits 4
saying why; a wait above the bound is refused naming --wait."""

import json
import os
import subprocess
import sys
from pathlib import Path

from planledger.api.runtime import open_runtime
from planledger.api.service import Service
from planledger.ledger.application import NewStep
from tests.support.live_server import author, live_server, session

PLANLEDGER = str(Path(sys.executable).parent / "planledger")
PLAN = "work"


def test_claim_next_wait_over_url_claims_the_step_a_release_frees(tmp_path: Path) -> None:
    runtime = open_runtime(str(tmp_path / "ledger.sqlite"))
    try:
        with live_server(runtime) as server, server.client() as http:
            made = http.post("/api/plans", headers=author(http), json={
                "slug": PLAN, "title": "Work", "steps": [{"title": "only"}]})
            (step_id,) = (s["step_id"] for s in made.json()["steps"])
            _, holder = session(http, "holder")
            token = http.post("/api/sessions", json={"name": "cli"}).json()["token"]
            assert http.post(f"/api/steps/{step_id}/claim", headers=holder).status_code == 200
            waiting = subprocess.Popen(
                [PLANLEDGER, "claim-next", PLAN, "--wait", "60", "--json", "--url", server.url,
                 "--token", token], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            service: Service = server.app.state.service
            assert service.waiting.waiting(PLAN, 1, timeout=60), waiting.stderr
            assert http.post(f"/api/steps/{step_id}/release", headers=holder).status_code == 200
            out, err = waiting.communicate(timeout=60)
    finally:
        runtime.close()
    assert waiting.returncode == 0, err.decode()
    assert json.loads(out)["claimed"]["step_id"] == step_id


def test_claim_next_wait_on_the_embedded_store_exits_4_saying_why_when_time_is_up(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db)
    try:
        planner = runtime.ledger.start_session("planner").id
        (step_id,) = runtime.ledger.create_plan(PLAN, "Work", steps=[NewStep("only")],
                                                actor=planner)[1]
        holder, agent = (runtime.ledger.start_session(n).id for n in ("holder", "agent"))
        runtime.ledger.claim(step_id, holder)
    finally:
        runtime.close()

    done = _cli("claim-next", PLAN, "--wait", "1", "--json", "--db", db, "--session", agent)

    assert done.returncode == 4, done.stderr
    assert json.loads(done.stdout)["reason"] == "all_held"


def test_claim_next_wait_above_the_bound_is_refused_naming_it(tmp_path: Path) -> None:
    done = _cli("claim-next", PLAN, "--wait", "301", "--db", str(tmp_path / "x.sqlite"))
    assert done.returncode == 2 and "--wait" in done.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([PLANLEDGER, *args], capture_output=True, text=True, timeout=120,
                          env=env, check=False)

