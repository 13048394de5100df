"""Crafted recordings: edited, then re-hashed so that every stream's chain holds (and
`audit verify FILE` passes), or left with a broken chain. Import refuses each before
writing anything, naming the line and why; the store stays empty and its API keeps
answering."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planledger.api.runtime import open_runtime
from planledger.ledger.chain import HASH_KEY, PREV_KEY
from planledger.main import run as app
from planledger.replays.fixture import seed_auth_refresh
from planledger.replays.format import write_file
from planledger.replays.recording import export
from tests.support.cli_runner import CliRunner
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.forgery import Lines
from tests.support.forgery import events as _events
from tests.support.forgery import resealed as _resealed

runner = CliRunner()


@pytest.fixture
def lines(tmp_path: Path, clock: FakeClock) -> Lines:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    seed_auth_refresh(runtime.ledger, race=True)
    path = tmp_path / "good.jsonl"
    write_file(export(runtime.store), path)
    runtime.close()
    return [json.loads(text) for text in path.read_text().splitlines()]




def _appended(lines: Lines, stream: str, topic: str, **fields: Any) -> Lines:
    """A new last event (of the last event's time and session), counted in the header."""
    last = _events(lines)[-1]
    version = max([e["version"] for e in _events(lines) if e["stream"] == stream])
    state = {"timestamp": last["state"]["timestamp"], "session_id": last["session"],
             "actor": last["session"], **fields}
    lines.append({**last, "position": last["position"] + 1, "stream": stream,
                  "version": version + 1, "topic": f"ledger.domain.events:{topic}",
                  "state": state, "command": None})
    lines[0]["events"] += 1
    return lines


def _wrong_title_type(lines: Lines) -> Lines:
    _events(lines, ":PlanCreated")[0]["state"]["title"] = 3
    return lines


def _evil_slug(lines: Lines) -> Lines:
    for line in _events(lines):
        if line["stream"] == "plan:auth-refresh":
            line["stream"] = "plan:../Evil Slug"
        for key in ("slug", "plan"):
            if line["state"].get(key) == "auth-refresh":
                line["state"][key] = "../Evil Slug"
    return lines


def _slug_in_another_stream(lines: Lines) -> Lines:
    _events(lines, ":PlanCreated")[0]["state"]["slug"] = "other-plan"
    return lines


def _dependency_cycle(lines: Lines) -> Lines:
    later = next(e["state"] for e in _events(lines, ":StepAdded") if e["state"]["depends_on"])
    return _appended(lines, "plan:auth-refresh", "DependenciesDeclared",
                     step_id=later["depends_on"][0], depends_on=[later["step_id"]])


def _step_of_no_plan(lines: Lines) -> Lines:
    _events(lines, ":StepOpened")[2]["state"]["plan"] = "nowhere"
    return lines


def _claim_of_a_done_step(lines: Lines) -> Lines:
    done = _events(lines, ":StepCompleted")[0]
    return _appended(lines, done["stream"], "StepClaimed", fence=9, lease_seconds=60,
                     expires_at=done["state"]["timestamp"])


def _stranger_field(lines: Lines) -> Lines:
    _events(lines, ":StepOpened")[-1]["state"]["originator_id"] = "plan:auth-refresh"
    return lines


CRAFTED: dict[str, tuple[Callable[[Lines], Lines], str, str]] = {
    "a title of the wrong type": (_wrong_title_type, ":PlanCreated",
                                  "cannot be read: field title: Input should be a valid string"),
    "a slug like ../Evil Slug": (_evil_slug, ":PlanCreated", "invalid slug"),
    "a slug in another plan's stream": (_slug_in_another_stream, ":PlanCreated",
                                        "must be in stream plan:other-plan"),
    "a dependency cycle": (_dependency_cycle, ":DependenciesDeclared", "dependency cycle"),
    "a step opened in a plan that never added it": (
        _step_of_no_plan, ":StepOpened", 'was not added to plan "nowhere"'),
    "a claim of a done step": (_claim_of_a_done_step, ":StepClaimed",
                               "step is done: it cannot be claimed"),
    "a state naming its own stream": (_stranger_field, ":StepOpened",
                                      "carries originator_id, which only the log assigns"),
}


def _write(lines: Lines, path: Path) -> Path:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


def _line_of(lines: Lines, kind: str, path: Path) -> int:
    """The file line of the first event of this kind that the damage touched."""
    good = {json.dumps(e) for e in _events(lines)}
    texts = path.read_text().splitlines()
    return next(n for n, text in enumerate(texts, 1) if kind in text
                and '"type": "event"' in text and json.dumps(json.loads(text)) not in good)


@pytest.mark.parametrize("case", list(CRAFTED))
def test_a_crafted_rehashed_recording_is_refused_naming_the_line_and_nothing_is_imported(
    case: str, lines: Lines, tmp_path: Path,
) -> None:
    damage, kind, why = CRAFTED[case]
    original = [dict(line, state=dict(line.get("state", {}))) for line in lines]
    path = _write(_resealed(damage(lines)), tmp_path / "crafted.jsonl")
    assert runner.invoke(app, ["audit", "verify", str(path)]).exit_code == 0  # chain holds
    db = str(tmp_path / "target.sqlite")

    result = runner.invoke(app, ["replay", "import", str(path), "--db", db])

    assert result.exit_code == 1, result.output
    assert f"line {_line_of(original, kind, path)}: event {kind[1:]}" in result.output
    assert why in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1
    runtime = open_runtime(db)
    assert not runtime.store.recorder.max_notification_id()
    runtime.close()
    timeline = runner.invoke(app, ["replay", "timeline", str(path)])
    assert timeline.exit_code == 1 and why in timeline.output


def test_a_recording_whose_chain_is_broken_is_refused_naming_the_line(
    lines: Lines, tmp_path: Path,
) -> None:
    edited = _events(lines, ":StepAdded")[1]
    edited["state"]["title"] = "Issue a rotating token pair, edited"  # not re-hashed
    path = _write(lines, tmp_path / "edited.jsonl")
    number = next(n for n, text in enumerate(path.read_text().splitlines(), 1)
                  if "edited" in text)
    db = str(tmp_path / "target.sqlite")

    result = runner.invoke(app, ["replay", "import", str(path), "--db", db])

    assert result.exit_code == 1, result.output
    assert f"line {number}: the hash chain is broken" in result.output
    assert "was changed" in result.output
    runtime = open_runtime(db)
    assert not runtime.store.recorder.max_notification_id()
    runtime.close()


def test_a_recording_stripped_of_its_hashes_is_refused(lines: Lines, tmp_path: Path) -> None:
    for line in _events(lines):
        line["state"] = {k: v for k, v in line["state"].items() if k not in (PREV_KEY, HASH_KEY)}
    path = _write(lines, tmp_path / "stripped.jsonl")

    result = runner.invoke(app, ["replay", "import", str(path), "--db", "memory"])

    assert result.exit_code == 1 and "carries no hash" in result.output, result.output


def test_a_lone_surrogate_in_a_state_is_refused_naming_the_line(
    lines: Lines, tmp_path: Path,
) -> None:
    path = _write(lines, tmp_path / "surrogate.jsonl")
    texts = path.read_text().splitlines()
    number = next(n for n, t in enumerate(texts)
                  if "Issue a rotating" in t and '"type": "event"' in t)
    texts[number] = texts[number].replace("Issue a rotating", "Issue a \\udcff rotating")
    path.write_text("\n".join(texts) + "\n")

    result = runner.invoke(app, ["replay", "import", str(path), "--db", "memory"])

    assert result.exit_code == 1, result.output
    assert f"line {number + 1}: the state holds text that is not Unicode" in result.output


def test_a_recording_that_keeps_every_rule_still_imports_and_reads(
    lines: Lines, tmp_path: Path,
) -> None:
    path = _write(_resealed(lines), tmp_path / "good.jsonl")
    db = str(tmp_path / "target.sqlite")

    result = runner.invoke(app, ["replay", "import", str(path), "--db", db])

    assert result.exit_code == 0, result.output
    shown = runner.invoke(app, ["plan", "show", "auth-refresh", "--db", db])
    assert shown.exit_code == 0 and "4/6 done" in shown.output, shown.output
