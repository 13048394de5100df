"""Recordings: export a log to the JSONL file, import it into a fresh store, and refuse
files that are malformed, of another schema version, or truncated, importing nothing."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.main import run as app
from planledger.projections.timeline import TimelineModel
from planledger.replays.format import RecordingError, Selection, write_file
from planledger.replays.reading import read, read_file
from planledger.replays.recording import export, import_into
from planledger.replays.rerun import rerun
from tests.support.busy_log import write_busy_log
from tests.support.cli_runner import CliRunner
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.postgres import fresh_schema


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def fresh_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty store of each kind to import into."""
    if request.param == "postgres":
        with fresh_schema() as url:
            yield url
    else:
        yield "memory" if request.param == "memory" else str(tmp_path / "imported.sqlite")


def _read_models(runtime: Runtime) -> dict[str, object]:
    reads = runtime.reads
    reads.catch_up()
    plans = sorted(reads.plans)
    return {"plans": dict(reads.plans), "steps": dict(reads.steps),
            "sessions": dict(reads.sessions), "progress": reads.progress_all(),
            "ready": {p: reads.ready_ids(p) for p in plans},
            "timeline": TimelineModel(runtime.store).timeline().entries}


def test_export_then_import_into_a_fresh_store_gives_the_same_read_models(
    runtime: Runtime, clock: FakeClock, fresh_db: str, tmp_path: Path,
) -> None:
    write_busy_log(runtime.ledger, clock)
    path = tmp_path / "busy.jsonl"
    write_file(export(runtime.store), path)

    imported = open_runtime(fresh_db, clock=clock, ids=SequentialIds())
    try:
        count = import_into(imported.store, read_file(path))
        assert count == len(read_file(path).events) > 40
        assert _read_models(imported) == _read_models(runtime)
    finally:
        imported.close()


def test_every_event_is_recorded_with_its_command_including_refused_attempts(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    log = write_busy_log(runtime.ledger, clock)
    path = tmp_path / "busy.jsonl"
    write_file(export(runtime.store), path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]

    assert lines[0]["type"] == "header" and lines[0]["schema"] == 1
    commands = {line["seq"]: line for line in lines if line["type"] == "command"}
    events = [line for line in lines if line["type"] == "event"]
    assert [e["position"] for e in events] == sorted(e["position"] for e in events)
    bounce = next(e for e in events if e["topic"].endswith(":ClaimBounced"))
    assert bounce["session"] == log.agents[0] and bounce["state"]["holder"] == log.agents[1]
    assert commands[bounce["command"]]["name"] == "claim"
    assert commands[bounce["command"]]["args"]["step_id"] == log.steps[4]
    stale = next(e for e in events if e["topic"].endswith(":StaleFenceRejected"))
    assert commands[stale["command"]]["name"] == "complete"


def test_a_plan_export_holds_that_plan_and_reexecutes_on_its_own(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    write_busy_log(runtime.ledger, clock)
    recording = export(runtime.store, Selection(plan="second"))

    matched = [e for e in recording.events if not e.context]
    assert recording.header.partial
    assert {e.stream for e in matched} >= {"plan:second"}
    assert all("auth-refresh" not in json.dumps(e.state) for e in matched)
    assert rerun(recording).identical
    imported = open_runtime("memory")
    import_into(imported.store, recording)
    entries = TimelineModel(imported.store).timeline(plan="second").entries
    imported.close()
    assert {e.plan for e in entries if e.kind not in ("session_started", "session_ended")} \
        == {"second"}


def _shipped_lines() -> list[str]:
    return Path("replays/two-agents-race.jsonl").read_text().splitlines(keepends=True)


@pytest.mark.parametrize(("damage", "message"), [
    (lambda lines: [*lines[:4], "{not json\n", *lines[5:]], "line 5: not JSON"),
    (lambda lines: [lines[0].replace('"schema":1', '"schema":2'), *lines[1:]],
     "schema version 2 is newer"),
    (lambda lines: lines[:-3], "the header announces"),
    (lambda lines: [*lines[:6], lines[6].replace('"version":', '"vers":'), *lines[7:]],
     'line 7: missing "version"'),
])
def test_a_damaged_recording_is_refused_naming_the_problem_and_nothing_is_imported(
    damage: object, message: str, tmp_path: Path,
) -> None:
    path = tmp_path / "damaged.jsonl"
    path.write_text("".join(damage(_shipped_lines())))  # type: ignore[operator]
    db = str(tmp_path / "target.sqlite")

    result = CliRunner().invoke(app, ["replay", "import", str(path), "--db", db])

    assert result.exit_code == 1
    assert message in result.output
    runtime = open_runtime(db)
    assert not runtime.store.recorder.max_notification_id()
    runtime.close()


def test_import_refuses_a_store_that_already_holds_events(tmp_path: Path) -> None:
    db = str(tmp_path / "target.sqlite")
    runner = CliRunner()
    assert runner.invoke(app, ["replay", "import", "replays/two-agents-race.jsonl",
                               "--db", db]).exit_code == 0

    again = runner.invoke(app, ["replay", "import", "replays/two-agents-race.jsonl",
                                "--db", db])

    assert again.exit_code == 1 and "not empty" in again.output
    runtime = open_runtime(db)
    assert runtime.store.recorder.max_notification_id() == len(_shipped_lines()) - 1 - 21
    runtime.close()


def test_an_event_whose_readable_time_disagrees_with_its_state_is_refused() -> None:
    lines = _shipped_lines()
    number = next(i for i, line in enumerate(lines) if '"type":"event"' in line)
    event = json.loads(lines[number])
    event["time"] = "2001-01-01T00:00:00+00:00"
    lines[number] = json.dumps(event) + "\n"
    with pytest.raises(RecordingError, match=f"line {number + 1}: \"time\" disagrees"):
        read(lines)
