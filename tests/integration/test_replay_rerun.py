"""Re-execution: recorded commands at their recorded times with the recorded ids give the
recorded events byte for byte; a tampered recording is reported at the event changed."""

import json
from pathlib import Path

import pytest

from planledger.api.runtime import Runtime
from planledger.main import run as app
from planledger.replays.format import write_file
from planledger.replays.reading import read, read_file
from planledger.replays.recording import export
from planledger.replays.rerun import rerun
from tests.support.busy_log import EVIDENCE, write_busy_log
from tests.support.cli_runner import CliRunner
from tests.support.fakes import FakeClock

SHIPPED = sorted(Path("replays").glob("*.jsonl"))
RACE = Path("replays/two-agents-race.jsonl")


def test_the_two_agent_race_is_among_the_shipped_recordings() -> None:
    assert RACE in SHIPPED


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_recording_reexecutes_identically(path: Path) -> None:
    report = rerun(read_file(path))

    assert report.identical, report.describe()
    assert report.events == len(read_file(path).events)


def test_a_log_with_every_kind_of_command_reexecutes_identically(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    write_busy_log(runtime.ledger, clock)
    path = tmp_path / "busy.jsonl"
    write_file(export(runtime.store), path)

    report = rerun(read_file(path))

    assert report.identical, report.describe()
    assert report.refused == 4  # the bounce, the blocked and closed claims, the stale fence


def _tamper(field: str, topic: str, value: object) -> tuple[list[str], dict[str, object]]:
    """The shipped race with one field of the first `topic` event changed."""
    lines = RACE.read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if f':{topic}"' in line)
    event = json.loads(lines[number])
    event["state"][field] = value
    lines[number] = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return lines, event


@pytest.mark.parametrize(("topic", "field", "value"), [
    ("ClaimBounced", "holder", "01JZZZZZZZZZZZZZZZZZZZZZZZ"),
    ("StepClaimed", "fence", 7),
    ("StepAdded", "title", "A title nobody gave"),
    ("ReadyListed", "step_ids", []),
])
def test_a_tampered_event_is_reported_at_that_event(topic: str, field: str, value: object) -> None:
    lines, event = _tamper(field, topic, value)

    report = rerun(read(lines))

    mismatch = report.mismatch
    assert mismatch is not None and mismatch.expected is not None and mismatch.got is not None
    assert (mismatch.expected.position, mismatch.expected.stream, mismatch.expected.version) == \
        (event["position"], event["stream"], event["version"])
    assert json.loads(mismatch.got.state)[field] != value
    text = mismatch.describe()
    assert f"position {event['position']}" in text and f"version {event['version']}" in text
    assert f"differs in: {field}" in text


def test_a_tampered_command_is_reported_at_its_first_event() -> None:
    lines = RACE.read_text().splitlines()
    number = next(i for i, line in enumerate(lines) if '"name":"claim"' in line)
    command = json.loads(lines[number])
    command["args"]["lease_seconds"] = 60
    lines[number] = json.dumps(command)
    first_event = json.loads(lines[number + 1])

    mismatch = rerun(read(lines)).mismatch

    assert mismatch is not None and mismatch.expected is not None
    assert mismatch.expected.position == first_event["position"]
    assert mismatch.command.seq == command["seq"]


def test_planledger_replay_run_exits_nonzero_naming_the_tampered_event(tmp_path: Path) -> None:
    lines, event = _tamper("holder", "ClaimBounced", "01JZZZZZZZZZZZZZZZZZZZZZZZ")
    path = tmp_path / "tampered.jsonl"
    path.write_text("\n".join(lines) + "\n")
    runner = CliRunner()

    good = runner.invoke(app, ["replay", "run", str(RACE)])
    bad = runner.invoke(app, ["replay", "run", str(path)])

    assert good.exit_code == 0 and "identical" in good.output
    assert bad.exit_code == 1
    assert "determinism failure at event" in bad.output
    assert f"position {event['position']}, stream {event['stream']}" in bad.output
    assert "expected: ClaimBounced" in bad.output and "01JZZZZZZZZZZZZZZZZZZZZZZZ" in bad.output


def test_a_completions_evidence_is_recorded_in_its_command_and_reexecutes_identically(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    write_busy_log(runtime.ledger, clock)  # a completion with evidence, a strict plan
    path = tmp_path / "busy.jsonl"
    write_file(export(runtime.store), path)
    recording = read_file(path)

    completing = [c for c in recording.commands if c.name == "complete" and "evidence" in c.args]
    assert [c.args["evidence"] for c in completing] == [EVIDENCE.as_record()]
    assert completing[0].args["note"] == "limited per IP and per family"
    strict = next(c for c in recording.commands if c.name == "create_plan"
                  and c.args["slug"] == "second")
    assert strict.args["require_checks_pass"] is True
    ran = CliRunner().invoke(app, ["replay", "run", str(path)])
    assert ran.exit_code == 0 and "identical" in ran.output, ran.output


def test_a_tampered_evidence_is_reported_at_its_completion(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    write_busy_log(runtime.ledger, clock)
    path = tmp_path / "busy.jsonl"
    write_file(export(runtime.store), path)
    lines = path.read_text().splitlines()
    number = next(i for i, line in enumerate(lines)
                  if ':StepCompleted"' in line and '"evidence"' in line)
    event = json.loads(lines[number])
    event["state"]["evidence"]["checks"][1]["result"] = "pass"  # the failed check hidden
    lines[number] = json.dumps(event, ensure_ascii=False, separators=(",", ":"))

    mismatch = rerun(read(lines)).mismatch

    assert mismatch is not None and mismatch.expected is not None
    assert mismatch.expected.position == event["position"]
    assert "differs in: evidence" in mismatch.describe()
