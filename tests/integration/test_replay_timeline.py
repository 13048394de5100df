"""The merged timeline: one clock, a lane per session; bounces name the holder bounced
off; the same timeline whether read from the store or from a recording of it."""

import json
import re
import subprocess
import sys
from pathlib import Path

from planledger.api.runtime import Runtime
from planledger.api.timeline_render import html
from planledger.ledger.application import NewStep
from planledger.main import run as app
from planledger.projections.timeline import TimelineModel
from planledger.replays.format import write_file
from planledger.replays.reading import read_file
from planledger.replays.recording import decode, export
from tests.support import OPERATOR
from tests.support.busy_log import write_busy_log
from tests.support.cli_runner import CliRunner
from tests.support.fakes import FakeClock

RACE = Path("replays/two-agents-race.jsonl")
CLOCK = re.compile(r"\d\d:\d\d:\d\d\.\d{3}  ")  # a row's time


def test_a_recording_shows_the_same_timeline_as_the_store_it_came_from(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    write_busy_log(runtime.ledger, clock)
    path = tmp_path / "busy.jsonl"
    write_file(export(runtime.store), path)
    from_file = TimelineModel()
    for position, event in decode(read_file(path)):
        from_file.apply(position, event)

    assert from_file.timeline() == TimelineModel(runtime.store).timeline()


def test_entries_name_the_holders_behind_bounces_lapses_and_stale_fences(
    runtime: Runtime, clock: FakeClock,
) -> None:
    log = write_busy_log(runtime.ledger, clock)
    a, b, _ = log.agents
    entries = TimelineModel(runtime.store).timeline(plan="auth-refresh").entries

    bounced = next(e for e in entries if e.kind == "bounced")
    taken_over = next(e for e in entries if e.kind == "claimed" and e.fence == 2)
    stale = next(e for e in entries if e.kind == "stale_fence")
    ended = next(e for e in entries if e.kind == "released" and "session ended" in e.text)

    assert (bounced.session_id, bounced.holder, bounced.step_number) == (a, b, 5)
    assert (taken_over.session_id, taken_over.holder) == (a, b)  # B's lease had lapsed
    assert f'the claim of "{b}" had lapsed' in taken_over.text
    assert (stale.session_id, stale.holder) == (b, a)
    assert "at fence 2, the call carried fence 1" in stale.text
    assert ended.holder == ended.session_id == b


def test_a_plan_timeline_holds_that_plan_and_its_sessions_comings_and_goings(
    runtime: Runtime, clock: FakeClock,
) -> None:
    write_busy_log(runtime.ledger, clock)
    timeline = TimelineModel(runtime.store).timeline(plan="second")

    assert {e.plan for e in timeline.entries} <= {"second", None}
    assert {e.kind for e in timeline.entries if e.plan is None} <= {"session_started",
                                                                  "session_ended"}
    assert [p.plan for p in timeline.progress] == ["second"]


def test_lanes_come_one_per_session_in_order_of_first_appearance() -> None:
    timeline = TimelineModel()
    for position, event in decode(read_file(RACE)):
        timeline.apply(position, event)

    lanes = timeline.timeline().lanes

    assert [lane.label for lane in lanes] == ["seeder", "agent A", "agent B"]
    assert all(lane.session_id for lane in lanes)  # the seeder's session made the plan


def test_the_html_page_is_self_contained_and_escapes_what_it_shows(
    runtime: Runtime, clock: FakeClock,
) -> None:
    write_busy_log(runtime.ledger, clock)
    runtime.ledger.create_plan("x", "<script>alert(1)</script>", steps=[NewStep("a <b> & c")],
        actor=OPERATOR)
    page = html(TimelineModel(runtime.store).timeline())

    assert page.startswith("<!doctype html>") and "<style>" in page
    assert not re.search(r"""(src|href)\s*=|@import|url\(|<script""", page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "a &lt;b&gt; &amp; c" in page
    assert "task already claimed: held by &quot;" in page


def test_planledger_replay_timeline_prints_json_html_and_lanes() -> None:
    runner = CliRunner()

    as_json = runner.invoke(app, ["replay", "timeline", str(RACE), "--json"])
    as_html = runner.invoke(app, ["replay", "timeline", str(RACE), "--html"])
    for_people = runner.invoke(app, ["replay", "timeline", str(RACE)], env={"COLUMNS": "200"})

    assert as_json.exit_code == as_html.exit_code == for_people.exit_code == 0
    data = json.loads(as_json.output)
    bounce = next(e for e in data["entries"] if e["kind"] == "bounced")
    assert bounce["holder"] in {lane["session_id"] for lane in data["lanes"]}
    assert as_html.output.startswith("<!doctype html>")
    assert f'held by "{bounce["holder"]}"' in for_people.output
    lines = for_people.output.splitlines()
    header = next(line for line in lines if line.startswith("TIME"))
    assert re.split(r"\s{2,}", header) == ["TIME", "SEEDER", "AGENT A", "AGENT B"]
    bounced = next(line for line in lines if CLOCK.match(line) and "claim bounced" in line)
    assert bounced.index("claim bounced") == header.index("AGENT A")  # in A's column
    lanes = {(lane["label"], lane["session_id"]) for lane in data["lanes"]}
    assert lanes <= {tuple(re.split(r"\s{2,}", line)) for line in lines}  # each lane's id


def test_into_a_pipe_each_entry_is_one_line_naming_its_session() -> None:
    runner = CliRunner()
    data = json.loads(runner.invoke(app, ["replay", "timeline", str(RACE), "--json"]).output)
    shown = runner.invoke(app, ["replay", "timeline", str(RACE)])

    rows = [line for line in shown.output.splitlines() if CLOCK.match(line)]
    label = {lane["session_id"]: lane["label"] for lane in data["lanes"]}
    assert len(rows) == len(data["entries"])
    for row, entry in zip(rows, data["entries"], strict=True):
        assert re.split(r"\s{2,}", row, maxsplit=2)[1:] == [label[entry["session_id"]],
                                                             entry["text"]]


def test_a_narrow_terminal_folds_entries_under_a_session_column_keeping_ids_whole() -> None:
    runner = CliRunner()
    data = json.loads(runner.invoke(app, ["replay", "timeline", str(RACE), "--json"]).output)
    holder = next(e["holder"] for e in data["entries"] if e["kind"] == "bounced")
    shown = runner.invoke(app, ["replay", "timeline", str(RACE)], env={"COLUMNS": "100"})

    lines = shown.output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("TIME"))
    end = next(i for i, line in enumerate(lines) if line.startswith("winner:"))
    table = lines[start:end]
    assert re.split(r"\s{2,}", table[0]) == ["TIME", "SESSION", "WHAT"]
    assert all(len(line) <= 100 for line in table)
    assert len(table) > len(data["entries"]) + 1  # the long entries continue below
    assert any(f'"{holder}"' in line for line in table)


def test_a_reader_that_stops_early_ends_the_timeline_quietly() -> None:
    process = subprocess.Popen([sys.executable, "-m", "planledger", "replay", "timeline",
                                str(RACE)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # as `| head` does, here before the first line

    errors = process.stderr.read().decode()
    assert process.wait(timeout=60) == 1
    assert errors == ""


def test_a_timeline_can_be_narrowed_to_one_session() -> None:
    data = json.loads(CliRunner().invoke(
        app, ["replay", "timeline", str(RACE), "--json", "--session",
              _session_named("agent A")]).output)

    assert [lane["label"] for lane in data["lanes"]] == ["agent A"]
    assert [e["kind"] for e in data["entries"]] == [
        "session_started", "ready_listed", "bounced", "ready_listed", "claimed", "completed"]


def _session_named(name: str) -> str:
    for line in RACE.read_text().splitlines():
        event = json.loads(line)
        if event.get("topic", "").endswith(":SessionStarted") and \
                event["state"]["name"] == name:
            return str(event["stream"])
    raise AssertionError(name)


def test_a_completions_evidence_shows_in_the_terminal_json_and_html_timelines(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    write_busy_log(runtime.ledger, clock)
    said = ("1 commit (9fceb02) on limiter; https://github.com/example/app/pull/5; "
            "checks: tests pass, load fail")
    timeline = TimelineModel(runtime.store).timeline()
    completed = [e for e in timeline.entries if e.kind == "completed" and e.evidence]
    assert [e.text for e in completed] == [f"completed step 5: {said}"]
    as_json = [e for e in timeline.to_dict()["entries"] if e["evidence"]]
    assert as_json[0]["evidence"]["checks"][1] == {"name": "load", "result": "fail",
                                                   "command": None,
                                                   "summary": "p99 over budget"}
    assert said in html(timeline)
    path = tmp_path / "busy.jsonl"
    write_file(export(runtime.store), path)
    shown = CliRunner().invoke(app, ["replay", "timeline", str(path)], env={"COLUMNS": "300"})
    assert shown.exit_code == 0 and "1 commit (9fceb02) on limiter" in shown.output
