"""The two-agent demo: two sessions on real threads race for step 5 over the real Ledger;
one wins, the other bounces naming the winner, pivots to step 6; both complete."""

import json
from pathlib import Path

from planledger.api.runtime import Runtime
from planledger.api.timeline_render import story
from planledger.ledger.domain.ids import SessionId
from planledger.main import run as app
from planledger.projections.timeline import TimelineModel
from planledger.replays.demo import race
from planledger.replays.fixture import AUTH_REFRESH_STEPS, PLAN
from planledger.replays.reading import read_file
from planledger.replays.rerun import rerun
from tests.support.cli_runner import CliRunner


def test_the_race_timeline_names_the_winner_as_the_holder_of_the_bounce(runtime: Runtime) -> None:
    result = race(runtime)
    winner, loser = result.winner, result.loser
    step_5, step_6 = result.steps[4], result.steps[5]

    timeline = TimelineModel(runtime.store).timeline(
        sessions=tuple(a.session_id for a in result.agents))

    claims = [(e.session_id, e.step_id) for e in timeline.entries if e.kind == "claimed"]
    bounces = [e for e in timeline.entries if e.kind == "bounced"]
    assert claims == [(winner.session_id, step_5), (loser.session_id, step_6)]
    assert len(bounces) == 1
    assert (bounces[0].session_id, bounces[0].step_id) == (loser.session_id, step_5)
    assert bounces[0].holder == winner.session_id == loser.bounced_by
    assert f'task already claimed: held by "{winner.session_id}"' in bounces[0].text
    done = {(e.session_id, e.step_id) for e in timeline.entries if e.kind == "completed"}
    assert done == {(winner.session_id, step_5), (loser.session_id, step_6)}
    assert [p.rollup for p in timeline.progress] == ["auth-refresh: 6/6 done, 0 claimable, "
                                                     "0 in flight"]


def test_both_agents_saw_both_steps_ready_before_the_race(runtime: Runtime) -> None:
    result = race(runtime)

    timeline = TimelineModel(runtime.store).timeline(plan=PLAN)
    listings = [e for e in timeline.entries if e.kind == "ready_listed"]

    assert all(a.listed == result.steps[4:] for a in result.agents)
    assert [e.step_ids for e in listings].count(tuple(result.steps[4:])) == 2
    assert (result.loser.session_id, (result.steps[5],)) in [
        (e.session_id, e.step_ids) for e in listings]  # the pivot: only step 6 left


def test_the_story_tells_winner_bounce_pivot_completions_and_progress(
    runtime: Runtime,
) -> None:
    result = race(runtime)
    timeline = TimelineModel(runtime.store).timeline(
        sessions=tuple(a.session_id for a in result.agents))
    winner, loser = result.winner, result.loser

    lines = story(timeline)

    assert lines[0] == (f'winner: {winner.name} ("{winner.session_id}") claimed step 5 '
                        f'"{AUTH_REFRESH_STEPS[4]}"')
    assert lines[1].startswith(f"bounce: {loser.name} → claim bounced: task already claimed: "
                               f'held by "{winner.session_id}"')
    assert lines[2] == f'pivot:  {loser.name} claimed step 6 "{AUTH_REFRESH_STEPS[5]}"'
    assert lines[-1] == "plan:   auth-refresh: 6/6 done, 0 claimable, 0 in flight"


def test_planledger_demo_race_prints_the_bounce_and_records_a_log_that_replays(
    tmp_path: Path,
) -> None:
    path = tmp_path / "race.jsonl"

    shown = CliRunner().invoke(app, ["demo", "--race", "--record", str(path), "--json"])

    assert shown.exit_code == 0, shown.output
    timeline = json.loads(shown.output)
    bounce = next(e for e in timeline["entries"] if e["kind"] == "bounced")
    winner = next(e["session_id"] for e in timeline["entries"]
                  if e["kind"] == "claimed" and e["step_id"] == bounce["step_id"])
    assert bounce["holder"] == winner != bounce["session_id"]
    assert timeline["progress"][0]["rollup"].startswith("auth-refresh: 6/6 done")
    assert rerun(read_file(path)).identical


def test_planledger_demo_race_prints_the_timeline_for_people() -> None:
    shown = CliRunner().invoke(app, ["demo", "--race"], env={"COLUMNS": "160"})

    assert shown.exit_code == 0, shown.output
    assert "agent A" in shown.output and "agent B" in shown.output
    assert "task already claimed: held by" in shown.output
    assert "plan:   auth-refresh: 6/6 done" in shown.output


def test_planledger_demo_without_race_leaves_only_step_5_claimable(tmp_path: Path) -> None:
    db = str(tmp_path / "demo.sqlite")
    runner = CliRunner()

    shown = runner.invoke(app, ["demo", "--db", db], env={"COLUMNS": "160"})
    again = runner.invoke(app, ["demo", "--db", db])

    assert shown.exit_code == 0, shown.output
    assert "auth-refresh: 4/6 done, 1 claimable, 0 in flight" in shown.output
    assert again.exit_code == 1 and 'plan "auth-refresh" already exists' in again.output


def test_the_race_leaves_no_session_live(runtime: Runtime) -> None:
    result = race(runtime)

    runtime.reads.catch_up()
    sessions = runtime.reads.sessions
    assert [sessions[SessionId(a.session_id)].ended for a in result.agents] == [True, True]


def test_planledger_demo_race_leaves_no_session_live_in_the_store(tmp_path: Path) -> None:
    db = str(tmp_path / "demo.sqlite")

    shown = CliRunner().invoke(app, ["demo", "--race", "--db", db, "--json"])

    assert shown.exit_code == 0, shown.output
    ended = [e["session_id"] for e in json.loads(shown.output)["entries"]
             if e["kind"] == "session_ended"]
    assert len(set(ended)) == 2
    for session_id in ended:
        answer = CliRunner().invoke(app, ["session", "show", session_id, "--db", db,
                                          "--json"])
        assert answer.exit_code == 0, answer.output
        assert json.loads(answer.output)["ended"] is True
