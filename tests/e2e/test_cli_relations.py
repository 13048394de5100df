"""Epics and discovered work on the command line, on the embedded store and against a
server with --url: a plan file with a parent, children, a step that arrives done and
beads' priorities; `planledger add --parent --discovered-from --label --priority P1`;
`plan show` rolling up the children and `step` saying where a step was found; the epic
closed by its last child's completion."""

from pathlib import Path

from planledger.api.runtime import Runtime
from planledger.main import run as app
from tests.e2e.test_cli_embedded import Cli
from tests.support.live_server import live_server

PLAN = """\
slug: auth
title: Auth
steps:
  - key: epic
    title: Refresh tokens
    priority: P1
  - key: rotate
    title: Rotate
    parent: epic
    labels: [backend]
  - key: old
    title: Old work
    parent: epic
    done: true
    note: closed in beads by alice
"""


def _plan(cli: Cli, tmp_path: Path, *where: str) -> list[str]:
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(PLAN)
    made = cli.json("plan", "create", str(plan_file), *where)
    return [s["step_id"] for s in made["steps"]]


def test_discovered_work_is_added_under_an_epic_and_the_epic_closes_with_it(
    tmp_path: Path,
) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    epic, rotate, _ = _plan(cli, tmp_path)
    session = cli.json("session", "start", "--name", "agent A")["session_id"]
    added = cli.run("add", "auth", "Fix the reuse race", "--parent", "auth/epic",
                    "--discovered-from", "auth#2", "--label", "bug", "--label", "auth",
                    "--priority", "P0", "--session", session)
    assert added.startswith('added auth#4 "Fix the reuse race"')
    assert "labels: bug, auth" in added
    shown = cli.run("plan", "show", "auth")
    assert 'waits on auth#2 "Rotate", auth#4 "Fix the reuse race" (1/3 children done)' in shown
    step = cli.run("step", "auth#4")
    assert "discovered while working on auth#2" in step and "parent: auth#1" in step
    found = cli.json("step", "auth#4")
    assert (found["priority"], found["parent"], found["discovered_from"]) == (0, epic, rotate)

    blocked = cli.runner.invoke(app, ["claim", "auth#1", "--session", session], env=cli.env)
    assert blocked.exit_code == 3 and 'waits on auth#2 "Rotate"' in blocked.stderr
    for child in ("auth#2", "auth#4"):
        cli.run("claim", child, "--session", session)
        cli.run("complete", child, "--session", session)
    assert cli.json("step", "auth#1")["status"] == "done"
    assert "closed: its last child finished" in cli.run("step", "auth#1")
    bad = cli.runner.invoke(app, ["add", "auth", "x", "--priority", "P7", "--session", session],
                            env=cli.env)
    assert bad.exit_code == 1 and "P0 .. P4" in bad.stderr


def test_add_reaches_a_server_with_url(rt: Runtime, tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "unused.sqlite"))
    with live_server(rt) as server:
        url = ["--url", server.url]
        token = cli.json("session", "start", "--name", "planner", *url)["token"]
        epic, rotate, _ = _plan(cli, tmp_path, *url, "--token", token)
        added = cli.json("add", "auth", "Found", "--parent", "auth#1", "--discovered-from",
                         "auth/rotate", "--label", "bug", "--priority", "P3",
                         *url, "--token", token)
        assert (added["parent"], added["discovered_from"], added["labels"],
                added["priority"]) == (epic, rotate, ["bug"], 3)
        assert cli.json("step", "auth#1", *url)["children"] == "1/3 children done"
