"""Bringing a backlog over from beads and Claude Code, as a user does it: `python -m
planledger import beads FILE --plan SLUG --db …` in its own process, the plan read back
through the client, `export beads` giving the same issues back, a second import adding
nothing, and every bad source refused, naming where and why, with nothing written."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from planledger.api import reads
from planledger.api.cli.imports import MAX_SOURCE_BYTES
from planledger.api.client import LocalClient
from planledger.api.runtime import Runtime
from planledger.main import run as app
from tests.e2e.test_cli_embedded import Cli
from tests.support.cli_runner import CliRunner
from tests.support.live_server import live_server

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BEADS = FIXTURES / "beads" / "issues.jsonl"
TASKS = FIXTURES / "claude-tasks" / "auth-list"


def planledger(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planledger", *args, "--db", str(db)],
                          env={**os.environ, "COLUMNS": "200"}, capture_output=True,
                          text=True, timeout=120, check=False)


def imported(db: Path, *args: str) -> Any:
    done = planledger(db, "import", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _issues(text: str) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for i in map(json.loads, text.splitlines()) if i.get("status")
            != "tombstone"}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "ledger.sqlite"


def test_a_beads_backlog_arrives_in_one_command_and_keeps_its_ids(db: Path) -> None:
    answer = imported(db, "beads", str(BEADS), "--plan", "auth")
    assert (answer["added"], answer["done"], answer["skipped"]) == (6, 1, {"deleted issue": 1})
    with LocalClient(db=str(db)) as client:
        steps = {s.key: s for s in client.plan("auth").steps}
        assert steps["bd-c3d4"].status == "done"  # closed in beads
        assert steps["bd-e5f6"].depends_on == [steps["bd-c3d4"].step_id]
        assert steps["bd-e5f6"].priority == 0
        held = client.step("bd-e5f6")  # a beads id is a reference, on its own
        assert held.key == "bd-e5f6" and held.status == "open"
        noted = [e.data for e in held.history if e.type == "StepNoted"]
        assert noted and '"bob"' in noted[0]["text"]
        assert client.step("auth/bd-i9j0").title == "Clock skew breaks token expiry in tests"
        # An epic waits on its open children: not claimable until they are done.
        assert client.step("bd-a1b2").claimable is False
    shown = planledger(db, "step", "bd-g7h8")
    assert shown.returncode == 0 and "Revoke the family on reuse" in shown.stdout


def test_an_export_gives_the_same_issues_back_field_for_field(db: Path,
                                                             tmp_path: Path) -> None:
    imported(db, "beads", str(BEADS), "--plan", "auth")
    exported = tmp_path / "back.jsonl"
    done = planledger(db, "export", "beads", "--plan", "auth", "-o", str(exported))
    assert done.returncode == 0, done.stderr
    before, after = _issues(BEADS.read_text()), _issues(exported.read_text())
    assert set(after) == set(before)
    for issue_id, issue in before.items():
        back = after[issue_id]
        assert back["title"] == issue["title"]
        assert back["priority"] == issue["priority"]
        assert back.get("labels", []) == issue.get("labels", [])
        assert (back["status"] == "closed") == (issue["status"] == "closed"), issue_id
        assert {(d["issue_id"], d["depends_on_id"], d["type"])
                for d in back.get("dependencies", [])} == {
            (d["issue_id"], d["depends_on_id"], d["type"])
            for d in issue.get("dependencies", [])}, issue_id
        # beads' design, acceptance criteria and notes are kept in the body, after the
        # description, under their headings: written back, they are in the description.
        assert back.get("description", "").startswith(issue.get("description", ""))
    assert after["bd-a1b2"]["issue_type"] == "epic"  # it has children
    assert after["bd-c3d4"]["description"] == (
        "Migration and model.\n\n## Design\n\nOne row per family; revoked_at nullable.")
    again = planledger(db, "import", "beads", str(exported), "--plan", "auth")
    assert again.returncode == 0 and "nothing to add" in again.stdout


def test_importing_the_same_file_again_adds_nothing_and_says_so(db: Path) -> None:
    imported(db, "beads", str(BEADS), "--plan", "auth")
    with LocalClient(db=str(db)) as client:
        logged = client.log(limit=1000).events
    again = planledger(db, "import", "beads", str(BEADS), "--plan", "auth")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith('nothing to add: plan "auth" already holds all 6 issues')
    with LocalClient(db=str(db)) as client:
        assert client.log(limit=1000).events == logged


def test_a_plan_lacking_some_issues_is_refused_naming_them_and_left_as_it_is(
    db: Path, tmp_path: Path,
) -> None:
    first = tmp_path / "first.jsonl"
    first.write_text(BEADS.read_text().splitlines()[0] + "\n")  # the epic alone
    imported(db, "beads", str(first), "--plan", "auth")
    refused = planledger(db, "import", "beads", str(BEADS), "--plan", "auth")
    assert refused.returncode == 1
    assert ('"auth" exists and lacks 5 of the 6 issues (\'bd-c3d4\', \'bd-e5f6\'' in
            refused.stderr)
    with LocalClient(db=str(db)) as client:
        assert [s.key for s in client.plan("auth").steps] == ["bd-a1b2"]


def test_a_claude_code_task_list_arrives_with_its_dependencies(db: Path) -> None:
    answer = imported(db, "claude-tasks", str(TASKS), "--plan", "tasks")
    assert answer["added"] == 4
    assert answer["skipped"] == {"file that is not a task": 2, "deleted task": 1,
                                 "dependency on a deleted task": 1}
    with LocalClient(db=str(db)) as client:
        steps = {s.key: s for s in client.plan("tasks").steps}
        assert steps["task-1"].status == "done"
        assert steps["task-3"].depends_on == [steps["task-2"].step_id]
        assert '"owner": "backend-dev"' in steps["task-2"].body
    said = planledger(db, "import", "claude-tasks", str(TASKS), "--plan", "tasks")
    assert "nothing to add" in said.stdout
    assert "left out: file that is not a task: 2, deleted task: 1" in said.stdout


GOOD = BEADS.read_text().splitlines()[0]


@pytest.mark.parametrize(("content", "said"), [
    (f'{GOOD}\n{{"id": "bd-2", "title": \n'.encode(), "line 2: is not JSON"),
    (f'{GOOD}\n{{"id": "bd-2", "title": "x\\udfffy"}}\n'.encode(),
     "line 2: holds a lone surrogate"),
    (f'{GOOD}\n{{"id": "bd-2", "title": "t", "dependencies": '
     f'[{{"depends_on_id": "bd-gone"}}]}}\n'.encode(), "names 'bd-gone', which the source "
                                                      "does not hold"),
    ((FIXTURES / "beads" / "cycle.jsonl").read_bytes(),
     "form a cycle: bd-x1 -> bd-x3 -> bd-x2 -> bd-x1"),
    (b"", "holds no issue to import"),
], ids=["bad-json", "lone-surrogate", "missing-id", "cycle", "empty"])
def test_a_bad_source_is_refused_naming_where_and_why_with_nothing_written(
    db: Path, tmp_path: Path, content: bytes, said: str,
) -> None:
    source = tmp_path / "issues.jsonl"
    source.write_bytes(content)
    refused = planledger(db, "import", "beads", str(source), "--plan", "auth")
    assert refused.returncode == 1
    assert said in refused.stderr and "Traceback" not in refused.stderr
    with LocalClient(db=str(db)) as client:
        assert client.plans() == []


def test_a_file_too_large_to_import_is_refused_before_it_is_read(db: Path,
                                                                 tmp_path: Path) -> None:
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as file:
        file.truncate(MAX_SOURCE_BYTES + 1)  # sparse: no disk is spent on it
    refused = planledger(db, "import", "beads", str(huge), "--plan", "auth")
    assert refused.returncode == 1
    assert f"is {MAX_SOURCE_BYTES + 1} bytes; an import reads at most" in refused.stderr


def test_an_import_over_url_is_one_authored_write_on_the_server(rt: Runtime,
                                                               tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"PLANLEDGER_DB": str(tmp_path / "unused.sqlite"), "COLUMNS": "200"}
    with live_server(rt) as server:
        url = ["--url", server.url]
        done = runner.invoke(app, ["import", "beads", str(BEADS), "--plan", "auth", *url],
                             env=env)
        assert done.exit_code == 0, done.stderr
        again = runner.invoke(app, ["import", "beads", str(BEADS), "--plan", "auth", *url],
                              env=env)
        assert again.exit_code == 0 and "nothing to add" in again.output
        exported = runner.invoke(app, ["export", "beads", "--plan", "auth", *url], env=env)
        assert exported.exit_code == 0, exported.stderr
    steps = {s.key: s for s in reads.plan(rt, "auth").steps}
    assert steps["bd-c3d4"].status == "done"
    assert steps["bd-e5f6"].parent == steps["bd-a1b2"].step_id
    assert steps["bd-i9j0"].labels == ["flaky", "tests"]
    assert _issues(exported.output).keys() == _issues(BEADS.read_text()).keys()
    added = [e for e in reads.log_page(rt, 0, 100).events if e.type == "PlanCreated"]
    author = reads.session(rt, added[0].actor or "")
    assert author.name is not None and author.name.endswith("(plan create)")


def test_a_plan_made_here_is_exported_with_its_numbers_holders_and_closes(
    tmp_path: Path,
) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    plan_file = tmp_path / "plan.md"
    plan_file.write_text("# Docs\nslug: docs\n## Steps\n- Write the intro\n"
                         "- Write the tutorial (after: 1)\n- Draw the diagram\n")
    cli.run("plan", "create", str(plan_file))
    agent = cli.json("session", "start", "--name", "agent A")["session_id"]
    cli.run("claim", "docs#1", "--session", agent)
    cli.run("drop", "docs#3")
    cli.run("add", "docs", "Fix a typo found on the way", "--discovered-from", "docs#1")
    issues = _issues(cli.run("export", "beads", "--plan", "docs"))
    assert sorted(issues) == ["1", "2", "3", "docs-4"]  # the file keyed 1..3; no key: N
    assert (issues["1"]["status"], issues["1"]["assignee"]) == ("in_progress", "agent A")
    assert issues["2"]["dependencies"] == [
        {"issue_id": "2", "depends_on_id": "1", "type": "blocks"}]
    assert (issues["3"]["status"], issues["3"]["close_reason"]) == ("closed", "dropped")
    assert issues["docs-4"]["dependencies"] == [
        {"issue_id": "docs-4", "depends_on_id": "1", "type": "discovered-from"}]


def test_two_imports_at_once_write_the_plan_once_and_both_say_what_they_did(
    db: Path,
) -> None:
    planledger(db, "plan", "list")  # the store exists before the two race for it
    args = [sys.executable, "-m", "planledger", "import", "beads", str(BEADS), "--plan",
            "auth", "--db", str(db)]
    racing = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True) for _ in range(2)]
    said = [(*p.communicate(timeout=120), p.returncode) for p in racing]
    assert [code for _, _, code in said] == [0, 0], said
    outs = sorted(out.split(" ", 1)[0] for out, _, _ in said)
    assert outs == ["imported", "nothing"]
    with LocalClient(db=str(db)) as client:
        created = [e for e in client.log(limit=1000).events if e.type == "PlanCreated"]
        assert len(created) == 1 and len(client.plan("auth").steps) == 6
