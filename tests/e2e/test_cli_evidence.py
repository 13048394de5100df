"""`planledger complete` with evidence (`--commit`, `--branch`, `--pr`, `--check`), on the
embedded store and against a server with --url: kept and shown by `step` and `timeline`;
a plan file that requires passing checks refuses a failed one, naming it (exit 1); hostile
evidence exits 1 with the field named, never a traceback; `--help` says each option."""

from pathlib import Path

from planledger.api.runtime import Runtime
from planledger.main import run as app
from tests.e2e.test_cli_embedded import Cli
from tests.support.live_server import live_server

SHA = "9fceb02d0ae598e95dc970b74767f19372d61af8"
PR = "https://github.com/example/app/pull/31"
STRICT_PLAN = """\
slug: strict
title: Strict checks
require_checks_pass: true
steps:
  - title: Ship the limiter
"""


def strict_step(cli: Cli, tmp_path: Path) -> tuple[str, str]:
    """The strict plan's step, claimed: its id and the claiming session."""
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(STRICT_PLAN)
    made = cli.json("plan", "create", str(plan_file))
    assert made["require_checks_pass"] is True
    step = made["steps"][0]["step_id"]
    session = cli.json("session", "start", "--name", "agent E")["session_id"]
    cli.run("claim", step, "--session", session)
    return step, session


def test_complete_keeps_the_evidence_and_step_and_timeline_show_it(
    tmp_path: Path,
) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    step, session = strict_step(cli, tmp_path)

    failed = cli.runner.invoke(app, ["complete", step, "--session", session, "--check",
                                     "tests=pass", "--check", "lint=fail:2 findings"],
                               env=cli.env)
    assert failed.exit_code == 1, failed.output
    assert 'check "lint" failed: plan strict requires every check to pass' in failed.stderr

    cli.run("complete", step, "--session", session, "--commit", SHA, "--commit", "ABCDEF1",
            "--branch", "feature/limiter", "--pr", PR, "--check", "tests=pass:383 passed",
            "--check", "lint=pass")

    shown = cli.json("step", step)
    completed = next(e for e in shown["history"] if e["type"] == "StepCompleted")
    assert completed["data"]["evidence"] == {
        "commits": [SHA, "abcdef1"], "branch": "feature/limiter", "pr": PR,
        "checks": [{"name": "tests", "result": "pass", "command": None,
                    "summary": "383 passed"},
                   {"name": "lint", "result": "pass", "command": None, "summary": None}]}
    table = cli.run("step", step)
    assert f"commits on feature/limiter: {SHA}, abcdef1" in table
    assert f"change request: {PR}" in table and "check tests: pass: 383 passed" in table
    timeline = cli.run("timeline", "--plan", "strict")
    assert "2 commits (9fceb02, abcdef1) on feature/limiter" in timeline
    entry = next(e for e in cli.json("timeline", "--plan", "strict")["entries"]
                 if e["kind"] == "completed")
    assert entry["evidence"]["pr"] == PR


def test_hostile_evidence_exits_1_naming_the_field(tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    step, session = strict_step(cli, tmp_path)
    for given, field in ((["--commit", "not-hex"], "evidence.commits[0]"),
                         (["--pr", "javascript:alert(1)"], "evidence.pr"),
                         (["--branch", "a..b"], "evidence.branch"),
                         (["--check", "tests=maybe"], "evidence.checks[0].result"),
                         (["--check", "no result given"], "evidence.checks[0].result"),
                         (["--check", "t=pass:" + "x" * 5_000], "evidence.checks[0].summary")):
        refused = cli.runner.invoke(app, ["complete", step, "--session", session, *given],
                                    env=cli.env)
        assert refused.exit_code == 1, (given, refused.output, refused.stderr)
        assert f"invalid {field}" in refused.stderr and "Traceback" not in refused.stderr
    assert cli.json("step", step)["status"] == "in_progress"


def test_complete_sends_the_evidence_to_a_server_with_url(rt: Runtime, tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "unused.sqlite"))
    with live_server(rt) as server:
        url = ["--url", server.url]
        token = cli.json("session", "start", "--name", "planner", *url)["token"]
        plan_file = tmp_path / "plan.yaml"
        plan_file.write_text(STRICT_PLAN)
        step = cli.json("plan", "create", str(plan_file), *url, "--token", token)[
            "steps"][0]["step_id"]
        cli.run("claim", step, *url, "--token", token)
        failed = cli.runner.invoke(app, ["complete", step, *url, "--token", token,
                                         "--check", "lint=fail"], env=cli.env)
        assert failed.exit_code == 1 and 'check "lint" failed' in failed.stderr
        hostile = cli.runner.invoke(app, ["complete", step, *url, "--token", token,
                                          "--pr", "javascript:alert(1)"], env=cli.env)
        assert hostile.exit_code == 1 and "evidence.pr" in hostile.stderr, hostile.stderr

        cli.run("complete", step, *url, "--token", token, "--commit", SHA, "--pr", PR,
                "--check", "lint=pass:clean")

        history = cli.json("step", step, *url)["history"]
    evidence = next(e for e in history if e["type"] == "StepCompleted")["data"]["evidence"]
    assert (evidence["commits"], evidence["pr"], evidence["checks"][0]["summary"]) == (
        [SHA], PR, "clean")


def test_complete_help_describes_each_evidence_option(tmp_path: Path) -> None:
    shown = Cli(str(tmp_path / "ledger.sqlite")).run("complete", "--help")
    for option in ("--commit SHA", "--branch BRANCH", "--pr URL",
                   "--check NAME=pass|fail[:SUMMARY]"):
        assert option in shown, shown
    assert "repeat for more" in shown and "requires every check to pass" in shown
