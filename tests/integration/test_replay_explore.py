"""What-if: other interleavings of the same sessions' commands, and their outcomes."""

from pathlib import Path

import pytest

from planledger.api.runtime import Runtime
from planledger.main import run as app
from planledger.replays.explore import ExploreReport, OutcomeCount, explore
from planledger.replays.fixture import seed_auth_refresh
from planledger.replays.reading import read_file
from planledger.replays.recording import export
from tests.support.cli_runner import CliRunner

RACE = Path("replays/two-agents-race.jsonl")
STEP_5 = 'step 5 "Rate-limit POST /auth/refresh (per-IP and per-family)"'


@pytest.fixture(scope="module")
def race_report() -> ExploreReport:
    return explore(read_file(RACE))


def _step_5(found: OutcomeCount) -> tuple[str | None, tuple[str, ...]]:
    steps = {step: (winner, losers) for step, winner, losers in found.outcome.steps}
    return steps[STEP_5]


def test_explore_on_the_recorded_race_finds_exactly_two_outcomes_a_wins_or_b_wins(
    race_report: ExploreReport,
) -> None:
    assert race_report.exhaustive and race_report.tried == race_report.possible
    assert sum(o.count for o in race_report.outcomes) == race_report.possible
    assert sorted(_step_5(o) for o in race_report.outcomes) == [
        ("agent A", ("agent B",)), ("agent B", ("agent A",))]


def test_the_recorded_outcome_is_the_one_the_recording_shows(
    race_report: ExploreReport,
) -> None:
    recorded = [o for o in race_report.outcomes if o.recorded]

    assert len(recorded) == 1
    assert _step_5(recorded[0]) == ("agent B", ("agent A",))  # B landed first, A bounced
    assert "auth-refresh: 6/6 done" in " ".join(recorded[0].outcome.progress)


def test_only_sessions_that_overlapped_are_interleaved(race_report: ExploreReport) -> None:
    """The seeder worked alone before the agents started: it keeps its place."""
    assert race_report.lanes == ("agent A", "agent B")
    assert race_report.possible == 210  # A's 6 commands and B's 4: C(10, 4)


def test_many_interleavings_are_sampled_with_a_seed_reproducibly() -> None:
    recording = read_file(RACE)

    first = explore(recording, limit=50, samples=25, seed=7)
    again = explore(recording, limit=50, samples=25, seed=7)

    assert not first.exhaustive and first.seed == 7
    assert first == again
    assert 1 < first.tried <= 26  # the recorded interleaving, then distinct draws
    assert len(first.outcomes) == 2


def test_planledger_replay_explore_prints_the_outcomes_with_counts() -> None:
    result = CliRunner().invoke(app, ["replay", "explore", str(RACE), "--limit", "0",
                                      "--samples", "25", "--seed", "7"])

    assert result.exit_code == 0, result.output
    assert "a sample of" in result.output and "2 distinct outcome(s)" in result.output
    assert f"{STEP_5}: agent A wins it; agent B loses it" in result.output
    assert f"{STEP_5}: agent B wins it; agent A loses it  (the recorded one)" in result.output


def test_a_log_of_sessions_that_never_overlapped_has_one_outcome(runtime: Runtime) -> None:
    seed_auth_refresh(runtime.ledger)

    report = explore(export(runtime.store))

    assert report.possible == 1 and len(report.outcomes) == 1
