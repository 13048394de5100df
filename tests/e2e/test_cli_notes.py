"""Handoff notes on the command line, on the embedded store and with --url: `release
--note` and `note` leave them; `step` and `timeline` (all of it, and `--plan`) print them;
the next `claim` and `claim-next` print the notes they were handed, in the table for
people as in --json."""

from pathlib import Path

from planledger.api.runtime import Runtime
from tests.e2e.test_cli_embedded import Cli
from tests.support.live_server import live_server

PLAN = """\
slug: handoff
title: Handoff
steps:
  - key: a
    title: Migrate the schema
"""
HANDOFF = "blocked on the schema migration; tried X"


def _noted(cli: Cli, tmp_path: Path, *where: str) -> tuple[str, list[str]]:
    """The plan's step, claimed, released with a note and noted again: its id, and the
    options that act for a new session on it."""
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(PLAN)
    first = cli.json("session", "start", "--name", "agent A", *where)
    acting = ["--token", first["token"]] if where else ["--session", first["session_id"]]
    step = cli.json("plan", "create", str(plan_file), *where, *acting)["steps"][0]["step_id"]
    cli.run("claim", step, *where, *acting)
    cli.run("release", step, "--note", HANDOFF, *where, *acting)
    cli.run("note", step, "run make migrate first\nthen the tests", *where, *acting)
    second = cli.json("session", "start", "--name", "agent B", *where)
    return step, ["--token", second["token"]] if where else ["--session",
                                                            second["session_id"]]


def test_step_and_timelines_print_the_notes_and_claim_prints_those_handed(
    tmp_path: Path,
) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    step, acting = _noted(cli, tmp_path)

    shown = cli.run("step", step)
    assert f"note (with the release): {HANDOFF}" in shown
    assert "notes:" in shown and "    then the tests" in shown  # whole, line by line
    for timeline in (cli.run("timeline"), cli.run("timeline", "--plan", "handoff")):
        assert f"note on step 1: {HANDOFF}" in timeline
        assert "note on step 1: run make migrate first" in timeline

    claimed = cli.run("claim", step, *acting)

    assert "notes left since the step was last claimed:" in claimed
    assert f"    {HANDOFF}" in claimed and "    then the tests" in claimed
    assert "(with the release):" in claimed


def test_claim_next_prints_the_notes_it_was_handed(tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    _, acting = _noted(cli, tmp_path)

    claimed = cli.run("claim-next", "handoff", *acting)

    assert "claimed" in claimed and f"    {HANDOFF}" in claimed


def test_a_server_answers_the_same_notes_with_url(rt: Runtime, tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "unused.sqlite"))
    with live_server(rt) as server:
        url = ["--url", server.url]
        step, acting = _noted(cli, tmp_path, *url)

        shown = cli.run("step", step, *url)
        timeline = cli.run("timeline", "--plan", "handoff", *url)
        claimed = cli.run("claim", step, *url, *acting)

    assert f"note (with the release): {HANDOFF}" in shown
    assert f"note on step 1: {HANDOFF}" in timeline
    assert f"    {HANDOFF}" in claimed and "    then the tests" in claimed
