"""`planledger review` and `claim-next --review` on the embedded store and against a server
with --url: a plan file that requires reviews, a completion that waits in review and shows
so in `ready`, the author refused, a reviewer who takes it and approves it, a rejection
with a note that the next claimer reads, and a call without a verdict refused as usage."""

from pathlib import Path

from planledger.api.runtime import Runtime
from planledger.main import run as app
from tests.e2e.test_cli_embedded import Cli
from tests.support.live_server import live_server

REVIEWED_PLAN = """\
slug: reviewed
title: Reviewed work
review: required
steps:
  - key: limiter
    title: Rate-limit the refresh endpoint
  - title: Release
    depends_on: [limiter]
"""


def acting(cli: Cli, name: str) -> list[str]:
    """A new session's arguments: its token with --url (PLANLEDGER_URL), else its id."""
    started = cli.json("session", "start", "--name", name)
    if "PLANLEDGER_URL" in cli.env:
        return ["--token", started["token"]]
    return ["--session", started["session_id"]]


def submitted(cli: Cli, tmp_path: Path) -> tuple[list[str], list[str]]:
    """The plan's steps, the first completed by its author: the ids and the author's
    arguments."""
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(REVIEWED_PLAN)
    author = acting(cli, "author")
    made = cli.json("plan", "create", str(plan_file), *author)
    assert made["review_required"] is True
    steps = [s["step_id"] for s in made["steps"]]
    cli.run("claim", steps[0], *author)
    assert cli.json("complete", steps[0], *author)["status"] == "in_review"
    return steps, author


def test_the_author_is_refused_and_a_reviewer_approves(tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    steps, author = submitted(cli, tmp_path)

    shown = cli.run("ready", "reviewed")
    assert "in review" in shown and "reviewed#1" in shown and "author" in shown
    own = cli.runner.invoke(app, ["review", steps[0], "--approve", *author], env=cli.env)
    assert own.exit_code == 1, own.output
    assert "four eyes" in own.stderr and "Traceback" not in own.output + own.stderr
    reviewer = acting(cli, "reviewer")
    taken = cli.json("claim-next", "reviewed", "--review", *reviewer)
    assert taken["claimed"]["step_id"] == steps[0]
    assert taken["claimed"]["status"] == "in_review"
    approved = cli.run("review", steps[0], "--approve", *reviewer)
    assert "reviewed#1: done" in approved and f"unblocked: {steps[1]}" in approved
    assert cli.json("claim", steps[1], *author)["step_id"] == steps[1]


def test_nothing_to_review_exits_4_saying_why(tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    _, author = submitted(cli, tmp_path)

    nothing = cli.runner.invoke(app, ["claim-next", "reviewed", "--review", *author],
                                env=cli.env)
    assert nothing.exit_code == 4, nothing.output
    assert "your own work" in nothing.output


def test_a_review_needs_exactly_one_verdict(tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "ledger.sqlite"))
    steps, _ = submitted(cli, tmp_path)
    reviewer = acting(cli, "reviewer")

    for verdicts in ([], ["--approve", "--reject"]):
        called = cli.runner.invoke(app, ["review", steps[0], *verdicts, *reviewer],
                                   env=cli.env)
        assert called.exit_code == 2, called.output
        assert "give one of --approve or --reject" in called.stderr


def test_a_rejection_over_url_hands_its_note_to_the_next_claimer(rt: Runtime,
                                                                 tmp_path: Path) -> None:
    cli = Cli(str(tmp_path / "unused.sqlite"))
    with live_server(rt) as server:
        cli.env["PLANLEDGER_URL"] = server.url
        steps, author = submitted(cli, tmp_path)
        rejected = cli.json("review", steps[0], "--reject", "--note", "no test for expiry",
                            *acting(cli, "reviewer"))
        assert rejected["status"] == "open"
        reclaimed = cli.run("claim", steps[0], *author)
    assert "no test for expiry" in reclaimed
