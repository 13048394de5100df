"""The command line's tables for people (api.cli.output, api.cli.render): whole ids that
can be copied into the next command, titles cut to fit a terminal and never into a pipe,
holders by name beside their id, and a ready step that would bounce off another
session's paths saying so."""

import io
from typing import Any

import pytest

from planledger.api.cli import output, render

IDS = ["01M91DV5TR1D5B6M1T8DAAAAAA", "01M91DV5TR1D5B6M1T8DBBBBBB"]
HOLDER = "01M91DV5TR1D5B6M1T8DSSSSSS"


def step(step_id: str, title: str, **fields: Any) -> dict[str, Any]:
    return {"step_id": step_id, "title": title, "claimable": True, "status": "open",
            "holder": None, "holder_name": None, "lapsed_holder": None, "blockers": [],
            "fence": 0, "collides_with": [], **fields}


def shown(capsys: pytest.CaptureFixture[str], steps: list[dict[str, Any]]) -> list[str]:
    render.steps_table("ready in p", steps)
    return capsys.readouterr().out.splitlines()


def test_a_narrow_terminal_cuts_titles_and_keeps_every_id_whole(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    lines = shown(capsys, [step(IDS[0], "a title " * 20), step(IDS[1], "short")])
    assert lines[0] == "ready in p:"
    assert lines[1].split() == ["STEP", "STATUS", "HOLDER", "/", "BLOCKERS", "FENCE", "TITLE"]
    assert [line.split()[0] for line in lines[2:]] == IDS
    assert all(len(line) <= 80 for line in lines)
    assert lines[2].endswith("…") and lines[3].endswith("short")


def test_into_a_pipe_every_row_prints_whole_on_one_line(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    title = "a title " * 40
    lines = shown(capsys, [step(IDS[0], title.strip())])
    assert len(lines) == 3 and lines[2].endswith(title.strip())


def test_holders_show_their_name_beside_the_whole_id(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    held = step(IDS[0], "held step", claimable=False, status="in_progress",
                holder=HOLDER, holder_name="agent B", fence=3)
    row = shown(capsys, [held])[2]
    assert f"agent B ({HOLDER})" in row and " 3 " in row


def test_a_ready_step_that_would_bounce_off_reserved_paths_says_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    colliding = step(IDS[0], "metrics", collides_with=[
        {"holder": HOLDER, "holder_name": "agent A", "step_id": IDS[1], "title": "auth",
         "patterns": ["internal/auth/**"]}])
    row = shown(capsys, [colliding])[2]
    assert "claimable" not in row
    assert f"paths held  agent A ({HOLDER}) holds internal/auth/**" in row


@pytest.mark.parametrize("hostile", ["\x1b[2J\x1b[H", "line\nforged row", "\x9b31m", "\x07"])
def test_control_characters_never_reach_the_terminal(hostile: str) -> None:
    text = output.drawn(("step", "title"), [(IDS[0], f"x{hostile}y")], None, (1,), None)
    lines = text.splitlines()
    assert len(lines) == 2
    assert all(c.isprintable() for c in text.replace("\n", ""))


def test_a_line_is_printable_and_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.StringIO()
    monkeypatch.setattr("sys.stdout", stream)
    output.line("held by \x1b]0;owned\x07 agent\r\nB")
    assert stream.getvalue() == "held by ?]0;owned? agent  B\n"


def test_an_empty_table_is_its_heading_alone() -> None:
    assert output.drawn(("plan", "title"), [], "plans", (1,), 40) == "plans:\nPLAN  TITLE\n"


def test_paths_check_names_the_holder_beside_its_whole_id(
        capsys: pytest.CaptureFixture[str]) -> None:
    render.paths_found({"reserved": [
        {"holder": HOLDER, "holder_name": "agent A", "patterns": ["internal/auth/**"],
         "step_id": IDS[0], "title": "auth", "fence": 2,
         "expires_at": "2026-12-07T06:00:00+00:00"}], "message": ""})
    assert capsys.readouterr().out == (
        f'internal/auth/**: held by agent A ({HOLDER}), step {IDS[0]} "auth", fence 2, '
        "until 2026-12-07T06:00:00+00:00\n")


BOUNCE = f'claim bounced: task already claimed: held by "{HOLDER}" (step {IDS[0]} "auth")'


def test_a_folded_column_continues_below_breaking_between_words_never_inside_an_id() -> None:
    text = output.drawn(("time", "what"), [("10:00:00.001", BOUNCE), ("10:00:00.002", "done")],
                        None, (), 60, fold=(1,))
    lines = text.splitlines()
    assert all(len(line) <= 60 for line in lines)
    assert lines[1].startswith("10:00:00.001  claim bounced:")
    assert lines[-1].startswith("10:00:00.002  done")
    continued = lines[2:-1]
    assert continued and all(line.startswith(" " * 14) for line in continued)
    words = " ".join(line[14:] for line in lines[1:-1])
    assert words == BOUNCE  # every word whole, in order
    assert any(f'"{HOLDER}"' in line for line in lines)


def test_into_a_pipe_a_folded_column_prints_whole_on_one_line() -> None:
    text = output.drawn(("time", "what"), [("10:00:00.001", BOUNCE)], None, (), None,
                        fold=(1,))
    assert text.splitlines()[1] == f"10:00:00.001  {BOUNCE}"


def test_a_folded_column_is_never_narrower_than_its_longest_word() -> None:
    lines = output.drawn(("what",), [(BOUNCE,)], None, (), 10, fold=(0,)).splitlines()
    assert f'"{HOLDER}"' in lines
    assert max(len(line) for line in lines) == len(f'"{HOLDER}"')
