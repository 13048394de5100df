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
from planledger.api.schemas import StepRefOut
from planledger.ledger import commands as c
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


def test_an_edited_issue_imported_again_is_refused_naming_it_and_what_differs(
    db: Path, tmp_path: Path,
) -> None:
    imported(db, "beads", str(BEADS), "--plan", "re")
    edited = tmp_path / "e.jsonl"
    edited.write_text(BEADS.read_text().replace("Revoke the family", "Revoke the WHOLE family"))
    with LocalClient(db=str(db)) as client:
        logged = client.log(limit=1000).events
    refused = planledger(db, "import", "beads", str(edited), "--plan", "re")
    assert refused.returncode == 1
    assert ('plan re holds bd-g7h8 with another title: "Revoke the family on reuse" (the '
            'source: "Revoke the WHOLE family on reuse")') in refused.stderr
    with LocalClient(db=str(db)) as client:
        assert client.log(limit=1000).events == logged


def test_a_plan_made_otherwise_with_the_same_key_is_refused_naming_each_field(
    db: Path, tmp_path: Path,
) -> None:
    with LocalClient(db=str(db)) as client:
        client.create_plan(c.CreatePlan("re", "Made here", "", steps=(
            c.NewStep("Another title", key="bd-1", priority=0, labels=("x",)),)))
    source = tmp_path / "one.jsonl"
    source.write_text('{"id": "bd-1", "title": "The title", "priority": 2}\n')
    refused = planledger(db, "import", "beads", str(source), "--plan", "re")
    assert refused.returncode == 1
    for said in ('bd-1 with another title: "Another title" (the source: "The title")',
                 "bd-1 with another priority: 0 (the source: 2)",
                 "bd-1 with another labels: ['x'] (the source: [])"):
        assert said in refused.stderr


def test_an_export_keeps_the_plan_order_and_marks_dropped_steps(tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    plan_file = tmp_path / "plan.md"
    plan_file.write_text("# Docs\nslug: docs\n## Steps\n- Zeta first\n- Alpha second\n"
                         "- Middle third\n")
    cli.run("plan", "create", str(plan_file))
    cli.run("add", "docs", "Unkeyed fourth")
    cli.run("drop", "docs#3")
    exported = tmp_path / "docs.jsonl"
    exported.write_text(cli.run("export", "beads", "--plan", "docs"))
    lines = [json.loads(line)["id"] for line in exported.read_text().splitlines()]
    assert lines == ["1", "2", "3", "docs-4"]  # the plan's order, not the ids' (docs-4 < 3)
    cli.run("import", "beads", str(exported), "--plan", "again")
    with LocalClient(db=str(tmp_path / "ledger.sqlite")) as client:
        steps = client.plan("again").steps
    assert [s.title for s in steps] == ["Zeta first", "Alpha second", "Middle third",
                                        "Unkeyed fourth"]
    assert (steps[2].status, steps[2].labels) == ("done", ["dropped"])


def test_an_epic_waiting_on_its_own_grandchild_goes_out_and_comes_back(
    db: Path, tmp_path: Path,
) -> None:
    with LocalClient(db=str(db)) as client:
        made = client.create_plan(c.CreatePlan("tree", "Tree", "", steps=(
            c.NewStep("Epic", key="e"), c.NewStep("Child", key="g", parent="e"),
            c.NewStep("Grandchild", key="k", parent="g"),
            c.NewStep("Found", key="f", discovered_from="k"))))
        ids = {s.key: s.step_id for s in made.steps}
        client.execute(c.DeclareDependencies(ids["e"], (ids["k"],), client.author),
                       StepRefOut)
    exported = tmp_path / "tree.jsonl"
    exported.write_text(planledger(db, "export", "beads", "--plan", "tree").stdout)
    answer = imported(db, "beads", str(exported), "--plan", "back")
    assert answer["added"] == 4
    with LocalClient(db=str(db)) as client:
        steps = {s.key: s for s in client.plan("back").steps}
    assert steps["e"].depends_on == [steps["k"].step_id]
    assert steps["k"].parent == steps["g"].step_id
    assert steps["f"].discovered_from == steps["k"].step_id
    again = planledger(db, "import", "beads", str(exported), "--plan", "back")
    assert again.returncode == 0 and "nothing to add" in again.stdout


def test_a_closed_epic_with_open_children_arrives_open_and_is_counted(
    db: Path, tmp_path: Path,
) -> None:
    source = tmp_path / "epic.jsonl"
    source.write_text(
        '{"id": "bd-e", "title": "Epic", "status": "closed"}\n'
        '{"id": "bd-c", "title": "Child", "status": "open", "dependencies": '
        '[{"depends_on_id": "bd-e", "type": "parent-child"}]}\n')
    said = planledger(db, "import", "beads", str(source), "--plan", "epic")
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith('imported 2 steps into plan "epic" (1 with a note, 1 closed '
                                  "in the source but kept open for open children)")
    with LocalClient(db=str(db)) as client:
        epic = client.step("epic/bd-e")
    assert epic.status == "open"
    assert any("closed in beads, but 1 of its children is open" in e.data.get("text", "")
               for e in epic.history if e.type == "StepNoted")


def test_one_step_is_said_in_the_singular_and_stdin_and_a_bom_are_read(db: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "planledger", "import", "beads", "-", "--plan", "one",
         "--db", str(db)], input=b'\xef\xbb\xbf{"id": "bd-1", "title": "Only"}\n',
        capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith('imported 1 step into plan "one"\n')


def test_an_empty_task_list_says_it_holds_no_task(db: Path, tmp_path: Path) -> None:
    refused = planledger(db, "import", "claude-tasks", str(tmp_path), "--plan", "none")
    assert refused.returncode == 1
    assert "holds no task to import" in refused.stderr


def test_an_import_over_the_request_cap_says_which_setting_to_raise(db: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "planledger", "import", "beads", str(BEADS), "--plan", "cap",
         "--db", str(db)], env={**os.environ, "PLANLEDGER_MAX_STEPS_PER_REQUEST": "2"},
        capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert ("6 issues are more than the ledger takes in one request, and an import writes "
            "them in one: raise PLANLEDGER_MAX_STEPS_PER_REQUEST") in done.stderr
    assert "add the rest" not in done.stderr


def test_an_export_from_a_missing_store_creates_none(tmp_path: Path) -> None:
    missing = tmp_path / "nonexist.sqlite"
    refused = planledger(missing, "export", "beads", "--plan", "re")
    assert refused.returncode == 1
    assert f"no store at {missing}" in refused.stderr
    assert not missing.exists()


def test_a_symbolic_link_in_a_task_list_is_not_followed_and_is_counted(
    db: Path, tmp_path: Path,
) -> None:
    listed = tmp_path / "list"
    listed.mkdir()
    (listed / "1.json").write_text('{"id": "1", "subject": "Real"}')
    secret = tmp_path / "secret.json"
    secret.write_text('{"id": "2", "subject": "Outside the list"}')
    (listed / "2.json").symlink_to(secret)
    answer = imported(db, "claude-tasks", str(listed), "--plan", "linked")
    assert answer["added"] == 1
    assert answer["skipped"] == {"symbolic link (not followed)": 1}


def test_a_dependency_declared_after_the_creation_is_declared_over_url(
    rt: Runtime, tmp_path: Path,
) -> None:
    source = tmp_path / "tree.jsonl"
    source.write_text(
        '{"id": "e", "title": "Epic", "dependencies": [{"depends_on_id": "k"}]}\n'
        '{"id": "g", "title": "Child", "dependencies": [{"depends_on_id": "e", '
        '"type": "parent-child"}]}\n'
        '{"id": "k", "title": "Grandchild", "dependencies": [{"depends_on_id": "g", '
        '"type": "parent-child"}]}\n')
    env = {"PLANLEDGER_DB": str(tmp_path / "unused.sqlite"), "COLUMNS": "200"}
    with live_server(rt) as server:
        done = CliRunner().invoke(app, ["import", "beads", str(source), "--plan", "tree",
                                        "--url", server.url], env=env)
        assert done.exit_code == 0, done.stderr
    steps = {s.key: s for s in reads.plan(rt, "tree").steps}
    assert steps["e"].depends_on == [steps["k"].step_id]
