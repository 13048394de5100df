"""The `planledger` command line on the embedded store: a plan from a file, two sessions,
a bounce with its own exit code, claim-next, completion, and JSON for scripts."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from planledger.api.cli import EXIT_BOUNCED, EXIT_NOTHING_READY
from planledger.api.cli.common import open_client
from planledger.api.client import LocalClient
from planledger.api.runtime import open_runtime
from planledger.ledger.application import NewStep
from planledger.main import run as app
from tests.support import OPERATOR
from tests.support.cli_runner import CliRunner

PLANLEDGER = str(Path(sys.executable).parent / "planledger")

PLAN_YAML = """\
slug: auth-refresh
title: Refresh-token rotation
constraints:
  rate-limit-not-in-memory: use shared storage for the refresh rate limit
steps:
  - key: s4
    title: Set HttpOnly, Secure, SameSite cookies on the auth responses
  - key: s5
    title: Rate-limit POST /auth/refresh (per-IP and per-family)
    depends_on: [s4]
  - key: s6
    title: Emit metrics and an alert for refresh-reuse revocations
    depends_on: [s4]
"""

PLAN_MARKDOWN = """\
# Docs refresh
slug: docs

## Constraints
- plain-words: say it plainly

## Steps
1. [intro] Write the introduction
2. Write the tutorial (after: intro)
   Start from git clone.
"""


class Cli:
    def __init__(self, db: str) -> None:
        self.runner = CliRunner()
        self.env = {"PLANLEDGER_DB": db, "COLUMNS": "200"}

    def run(self, *args: str, code: int = 0, **env: str) -> str:
        result = self.runner.invoke(app, list(args), env={**self.env, **env})
        assert result.exit_code == code, (args, result.output, result.stderr)
        return result.output

    def json(self, *args: str, **env: str) -> Any:
        return json.loads(self.run(*args, "--json", **env))


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(str(tmp_path / "ledger.sqlite"))


def test_two_sessions_one_step_the_second_bounces_with_exit_3(cli: Cli, tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(PLAN_YAML)
    made = cli.json("plan", "create", str(plan_file))
    s4, s5, s6 = (s["step_id"] for s in made["steps"])
    a = cli.json("session", "start", "--name", "agent A")["session_id"]
    b = cli.json("session", "start", "--name", "agent B")["token"]
    cli.run("claim", s4, "--session", a)
    cli.run("complete", s4, "--session", a)
    assert [s["step_id"] for s in cli.json("ready", "auth-refresh")["ready"]] == [s5, s6]

    claimed = cli.json("claim", s5, "--token", b)
    assert claimed["fence"] == 1
    bounced = cli.runner.invoke(app, ["claim", s5, "--session", a], env=cli.env)
    assert bounced.exit_code == EXIT_BOUNCED
    assert f'task already claimed: held by "{claimed["holder"]}"' in bounced.stderr

    pivot = cli.json("claim-next", "auth-refresh", "--session", a)
    assert pivot["claimed"]["step_id"] == s6
    nothing = cli.runner.invoke(app, ["claim-next", "auth-refresh", "--session", a],
                                env=cli.env)
    assert nothing.exit_code == EXIT_NOTHING_READY and "2 held" in nothing.output

    cli.run("complete", s5, "--token", b)
    cli.run("complete", s6, "--session", a)
    shown = cli.json("plan", "show", "auth-refresh")
    assert shown["progress"]["line"] == "3/3 done, 0 claimable, 0 in flight"
    assert "3/3 done" in cli.run("plan", "list")
    story = cli.run("timeline", "--plan", "auth-refresh")
    assert f'task already claimed: held by "{claimed["holder"]}"' in story


def test_a_markdown_plan_file_and_the_readable_tables(cli: Cli, tmp_path: Path) -> None:
    plan_file = tmp_path / "docs.md"
    plan_file.write_text(PLAN_MARKDOWN)
    made = cli.json("plan", "create", str(plan_file))
    assert made["constraints"] == {"plain-words": "say it plainly"}
    intro, tutorial = made["steps"]
    assert tutorial["depends_on"] == [intro["step_id"]]
    table = cli.run("ready", "docs")
    assert "Write the introduction" in table and "waits on" in table
    step = cli.json("step", tutorial["step_id"])
    assert step["body"] == "Start from git clone."
    log = cli.json("log", "--limit", "2")
    assert [e["type"] for e in log["events"]] == ["PlanCreated", "StepAdded"]


def test_errors_exit_1_with_the_message(cli: Cli, tmp_path: Path) -> None:
    missing = cli.runner.invoke(app, ["plan", "show", "nope"], env=cli.env)
    assert missing.exit_code == 1 and 'plan not found: "nope"' in missing.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("slug: Bad Slug\ntitle: t\n")
    refused = cli.runner.invoke(app, ["plan", "create", str(bad)], env=cli.env)
    assert refused.exit_code == 1 and "invalid slug" in refused.stderr
    anonymous = cli.runner.invoke(app, ["claim", "01ZZ"], env=cli.env)
    assert anonymous.exit_code == 1 and "--session" in anonymous.stderr


@pytest.mark.parametrize(("args", "code"), [
    (["plan", "list"], 1), (["serve"], 1), (["db", "init"], 2), (["db", "backup", "copy"], 2),
])
def test_an_in_memory_sqlite_db_is_refused_before_any_file_is_made(
    args: list[str], code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    refused = CliRunner().invoke(app, [*args, "--db", ":memory:"])
    assert refused.exit_code == code, refused.output
    assert "the in-memory store is --db memory" in refused.stderr
    assert list(tmp_path.iterdir()) == []  # no store and no secret beside it


def test_the_installed_command_reports_a_bounce_by_exit_code(cli: Cli, tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(PLAN_YAML)
    s4 = cli.json("plan", "create", str(plan_file))["steps"][0]["step_id"]
    a = cli.json("session", "start")["session_id"]
    b = cli.json("session", "start")["session_id"]
    cli.run("claim", s4, "--session", a)
    done = subprocess.run([PLANLEDGER, "claim", s4, "--session", b], env={
        "PLANLEDGER_DB": cli.env["PLANLEDGER_DB"], "PATH": ""}, capture_output=True,
        text=True, timeout=60, check=False)
    assert done.returncode == EXIT_BOUNCED
    assert f'held by "{a}"' in done.stderr


def test_a_command_resumes_from_the_servers_checkpoint_and_sees_what_came_after(
    cli: Cli, tmp_path: Path,
) -> None:
    db = cli.env["PLANLEDGER_DB"]
    server = open_runtime(db, checkpoints=True)  # a server's runtime, shut down below
    _, steps = server.ledger.create_plan("big", "Big", steps=[
        NewStep(f"step {i}") for i in range(40)], actor=OPERATOR)
    agent = server.ledger.start_session("agent").id
    for step in steps[:10]:
        server.ledger.claim(step, agent)
    saved_at = server.reads.catch_up()
    server.close(checkpoint=True)
    later = open_runtime(db)  # another process claims after the checkpoint
    later.ledger.claim(steps[10], later.ledger.start_session("late").id)
    later.close()

    assert [s["step_id"] for s in cli.json("ready", "big")["ready"]] == steps[11:]
    with open_client(db, None, None, None) as client:  # what `ready` ran on
        assert isinstance(client, LocalClient)
        client.ready("big")
        assert client.service.runtime.reads.resumed_from == saved_at


@pytest.mark.parametrize("command", [["session", "start"], ["db", "status"], ["db", "init"]])
def test_a_command_on_the_embedded_store_loads_no_postgresql_driver_and_no_http_client(
    tmp_path: Path, command: list[str]
) -> None:
    """Importing psycopg was a sixth of every command's start-up (`planledger --help`
    1.2 s -> 1.0 s on a slow machine) and httpx a fifth of what was left; agents run these
    commands by the hundred."""
    db = str(tmp_path / "l.sqlite")
    probe = ("import sys\n"
             "from tests.support.cli_runner import CliRunner\n"
             "from planledger.main import run as app\n"
             f"done = CliRunner().invoke(app, [*{command!r}, '--db', {db!r}])\n"
             "assert done.exit_code == 0, done.output\n"
             "print(sorted(m for m in sys.modules\n"
             "             if m.split('.')[0] in ('psycopg', 'psycopg_pool', 'httpx')))\n")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, timeout=120)
    assert loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr


def test_paths_covering_the_whole_repository_print_a_warning_and_go_through(
    cli: Cli, tmp_path: Path,
) -> None:
    plan_file = tmp_path / "wide.yaml"
    plan_file.write_text("slug: wide\ntitle: Wide\nsteps:\n  - title: Everything\n"
                         "    paths: ['**']\n  - title: Docs\n    paths: [docs/]\n")
    made = cli.runner.invoke(app, ["plan", "create", str(plan_file)], env=cli.env)
    assert made.exit_code == 0, made.output
    assert made.stderr.startswith('warning: step wide#1: "**" reserves the whole repository')
    session = cli.json("session", "start", "--name", "agent A")["session_id"]
    claimed = cli.runner.invoke(app, ["claim", "wide#2", "--session", session,
                                      "--path", "**/*"], env=cli.env)
    assert claimed.exit_code == 0, claimed.output
    assert claimed.stdout.startswith('claimed wide#2 "Docs"')
    assert claimed.stderr.startswith('warning: "**/*" reserves the whole repository')
