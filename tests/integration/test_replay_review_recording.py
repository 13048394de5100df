"""The third shipped recording: the race on a plan that requires reviews, with evidence on
each completion, a refused review of one's own work, a rejection with a note and an
approval; re-executed byte for byte, its chains intact, its timeline telling the review."""

from pathlib import Path

from planledger.main import run as app
from planledger.replays.review_race import REJECTED, write_review_race
from tests.support.cli_runner import CliRunner

REVIEW = Path("replays/two-agents-review.jsonl")


def test_the_shipped_file_is_what_its_function_writes_byte_for_byte(tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"

    story = write_review_race(again)

    assert again.read_bytes() == REVIEW.read_bytes()
    assert story.bounce.startswith(f'task already claimed: held by "{story.agent_a}"')
    assert "four eyes" in story.own_review and story.agent_a in story.own_review


def test_it_reexecutes_identically_and_its_chains_verify() -> None:
    runner = CliRunner()

    run = runner.invoke(app, ["replay", "run", str(REVIEW)])
    audit = runner.invoke(app, ["audit", "verify", str(REVIEW)])

    assert run.exit_code == 0 and "identical" in run.output, run.output
    assert "2 refusals, as recorded" in run.output
    assert audit.exit_code == 0 and "intact" in audit.output, audit.output


def test_its_timeline_tells_the_review_and_the_evidence() -> None:
    shown = CliRunner().invoke(app, ["replay", "timeline", str(REVIEW)])

    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert any("completed step 1, for review" in line and "tests fail" in line
               for line in lines)
    assert any("review refused" in line and "four eyes" in line for line in lines)
    assert any("rejected: it is open again" in line for line in lines)
    assert any(REJECTED in line for line in lines)
    assert any("approved: it is done" in line for line in lines)
