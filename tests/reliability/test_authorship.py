"""Every write has an author: over HTTP and MCP a plan or step change without a session
token or the admin token is refused (401, naming what is missing) and writes nothing;
reads stay open; and the log alone answers "who did this?" for every change."""

import getpass
from pathlib import Path
from typing import Any

import httpx

from planledger.api.runtime import open_runtime
from planledger.ledger.domain import events as ev
from planledger.main import run as app
from tests.reliability.conftest import ADMIN, Served
from tests.support.cli_runner import CliRunner
from tests.support.mcp_wire import Wire, answer

runner = CliRunner()
_slugs = iter(range(10**6))


def _slug() -> str:
    return f"authored-{next(_slugs)}"


def _events(served: Served) -> list[dict[str, Any]]:
    """The whole log as the public `/api/log` pages it."""
    found: list[dict[str, Any]] = []
    after = 0
    while True:
        page = httpx.get(f"{served.url}/api/log", params={"after": after, "limit": 1000}).json()
        found += page["events"]
        if not page["more"]:
            return found
        after = page["next_after"]


def test_an_anonymous_write_is_refused_naming_what_is_missing_and_writes_nothing(
    served: Served,
) -> None:
    slug = _slug()
    step, done = served.plan(slug, 2)
    _, holder = served.session("holder")
    holder.post(f"/api/steps/{done}/claim", json={})
    assert holder.post(f"/api/steps/{done}/complete", json={}).status_code == 200
    anonymous = httpx.Client(base_url=served.url, timeout=30)
    writes = [
        ("POST", "/api/plans", {"slug": "never-made", "title": "t"}),
        ("POST", f"/api/plans/{slug}/steps", {"title": "t"}),
        ("PATCH", f"/api/steps/{step}", {"title": "renamed by nobody"}),
        ("POST", f"/api/steps/{step}/dependencies", {"depends_on": [done]}),
        ("POST", f"/api/steps/{step}/drop", {}),
        ("POST", f"/api/steps/{done}/reopen", None),
    ]
    before = len(_events(served))
    for method, path, body in writes:
        refused = anonymous.request(method, path, json=body)
        assert refused.status_code == 401, (path, refused.text)
        message = refused.json()["message"]
        assert "session token" in message and "admin token" in message, message
    assert len(_events(served)) == before  # nothing written, not even in part
    assert anonymous.get("/api/plans/never-made").status_code == 404
    shown = anonymous.get(f"/api/steps/{step}").json()  # reads stay open
    assert (shown["title"], shown["status"]) == ("step 0", "open")


def test_the_log_alone_says_who_reopened_a_step_and_who_dropped_one(served: Served) -> None:
    slug = _slug()
    planner, as_planner = served.session("planner")
    made = as_planner.post("/api/plans", json={"slug": slug, "title": "t", "steps": [
        {"title": "five"}, {"title": "six"}]})
    five, six = (s["step_id"] for s in made.json()["steps"])
    worker, as_worker = served.session("worker")
    as_worker.post(f"/api/steps/{five}/claim", json={})
    as_worker.post(f"/api/steps/{five}/complete", json={})
    reviewer, as_reviewer = served.session("reviewer")
    assert as_reviewer.post(f"/api/steps/{five}/reopen").status_code == 200
    admin = httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {ADMIN}"})
    assert admin.post(f"/api/steps/{six}/drop", json={}).status_code == 200

    log = _events(served)
    by = {(e["type"], e["stream"]): e["actor"] for e in log}
    assert by[("PlanCreated", f"plan:{slug}")] == planner
    assert by[("StepCompleted", five)] == worker
    assert by[("StepReopened", five)] == reviewer
    assert by[("StepDropped", six)] == "admin"
    mine = [e for e in log if e["stream"] in (f"plan:{slug}", five, six)]
    assert all(e["actor"] for e in mine), [e["type"] for e in mine if not e["actor"]]


def test_a_made_up_admin_token_authors_nothing(served: Served) -> None:
    (step,) = served.plan(_slug(), 1)
    for token in ("admin", ADMIN[:-1], f"{ADMIN} x"):
        refused = httpx.post(f"{served.url}/api/steps/{step}/drop", json={},
                             headers={"Authorization": f"Bearer {token}"})
        assert refused.status_code == 401, token


def test_over_mcp_a_write_needs_a_session_or_the_admin_token(served: Served) -> None:
    wire = Wire(httpx.Client(base_url=served.url, timeout=30))
    slug = _slug()
    refused = answer(wire.call_stateless("plans_create", slug=slug, title="t"))
    assert refused.error is not None and "no session" in refused.error
    assert httpx.get(f"{served.url}/api/plans/{slug}").status_code == 404
    made = answer(wire.call_stateless("plans_create", slug=slug, title="t", token=ADMIN,
                                      steps=["one"]))
    assert made.error is None, made.error
    (step,) = (s["step_id"] for s in made.result["steps"])  # type: ignore[index]
    anonymous_drop = answer(wire.call_stateless("tasks_drop", id=step))
    assert anonymous_drop.error is not None
    created = [e for e in _events(served) if e["stream"] == f"plan:{slug}"]
    assert [e["actor"] for e in created] == ["admin", "admin"]  # the plan and its step


def test_a_command_on_the_embedded_store_is_the_local_operators(tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.sqlite")
    plan = tmp_path / "plan.yaml"
    plan.write_text("slug: local\ntitle: Local work\nsteps:\n  - title: one\n")
    assert runner.invoke(app, ["plan", "create", str(plan), "--db", db]).exit_code == 0
    runtime = open_runtime(db)
    try:
        log = list(runtime.store.stream("plan:local"))
    finally:
        runtime.close()
    assert [type(e) for e in log] == [ev.PlanCreated, ev.StepAdded]
    assert {e.actor for e in log} == {f"local:{getpass.getuser()}"}


def test_plan_create_against_a_server_without_a_token_names_a_session_for_it(
    served: Served, tmp_path: Path,
) -> None:
    slug = _slug()
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"slug: {slug}\ntitle: From the CLI\nsteps:\n  - title: one\n")
    made = runner.invoke(app, ["plan", "create", str(plan), "--url", served.url],
                         env={"PLANLEDGER_TOKEN": ""})
    assert made.exit_code == 0, made.output
    created = next(e for e in _events(served) if e["type"] == "PlanCreated"
                   and e["stream"] == f"plan:{slug}")
    session = httpx.get(f"{served.url}/api/sessions/{created['actor']}").json()
    assert session["name"] == f"{getpass.getuser()} (plan create)"
    assert session["ended"]  # started for this one write, and ended
