"""The second shipped recording: agent B's claim bounces off agent A's path reservation,
B pivots to a step that collides with nothing, both complete."""

from pathlib import Path

import pytest

from planledger.main import run as app
from planledger.replays.explore import ExploreReport, explore
from planledger.replays.paths_race import write_paths_race
from planledger.replays.reading import read_file
from tests.support.cli_runner import CliRunner

PATHS = Path("replays/two-agents-paths.jsonl")
ROTATE = 'step 1 "Rotate refresh tokens across the auth package"'
LIMIT = 'step 2 "Rate-limit POST /auth/refresh"'


@pytest.fixture(scope="module")
def report() -> ExploreReport:
    return explore(read_file(PATHS))


def test_the_shipped_file_is_what_its_function_writes_byte_for_byte(tmp_path: Path) -> None:
    again = tmp_path / "again.jsonl"

    story = write_paths_race(again)

    assert again.read_bytes() == PATHS.read_bytes()
    assert story.bounce.startswith('paths reserved: "internal/auth/**" held by '
                                   f'"{story.agent_a}" (agent A, step auth-paths#1')
    assert story.guard.startswith(f'internal/auth/refresh.go: "internal/auth/**" is held by '
                                  f'"{story.agent_a}" (agent A, step auth-paths#1')


def test_it_reexecutes_identically_and_its_chains_verify() -> None:
    runner = CliRunner()

    run = runner.invoke(app, ["replay", "run", str(PATHS)])
    audit = runner.invoke(app, ["audit", "verify", str(PATHS)])

    assert run.exit_code == 0 and "identical" in run.output, run.output
    assert "1 refusals, as recorded" in run.output
    assert audit.exit_code == 0 and "intact" in audit.output, audit.output


def test_explore_finds_both_owners_of_the_overlapping_paths(report: ExploreReport) -> None:
    outcomes = {tuple(o.outcome.lines()[:2]): o for o in report.outcomes}

    a_holds = outcomes[(f"{ROTATE}: agent A wins it",
                        f"{LIMIT}: nobody wins it; agent B loses it")]
    b_holds = outcomes[(f"{ROTATE}: nobody wins it; agent A loses it",
                        f"{LIMIT}: agent B wins it")]

    assert report.exhaustive and a_holds.recorded and not b_holds.recorded
    assert [w for w, _ in a_holds.ways] == ["agent B bounced off agent A's paths on step 2"]
    assert [w for w, _ in b_holds.ways] == ["agent A bounced off agent B's paths on step 1"]
