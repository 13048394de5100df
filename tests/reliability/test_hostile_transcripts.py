"""Agents' transcripts are untrusted input: a bad line refuses the file naming the line,
sizes are bounded, nothing in them is executed or rendered as markup, and tokens in them
never reach the output unless asked for (--show-secrets)."""

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planledger.main import run as app
from planledger.replays.transcripts import MAX_LINE_BYTES
from tests.support.cli_runner import CliRunner

runner = CliRunner()
PLANLEDGER = str(Path(sys.executable).parent / "planledger")
SHIPPED = Path("replays/two-agents-race")
A, B, RECORDING = (SHIPPED / "agent-a.jsonl", SHIPPED / "agent-b.jsonl",
                   SHIPPED / "recording.jsonl")
Damage = Callable[[list[str]], list[str]]


def _lines() -> list[str]:
    return A.read_text().splitlines(keepends=True)


def _changed(lines: list[str], index: int, **changes: Any) -> list[str]:
    return [*lines[:index], json.dumps({**json.loads(lines[index]), **changes}) + "\n",
            *lines[index + 1:]]


DAMAGES: dict[str, tuple[Damage, str]] = {
    "a line cut short": (lambda ls: [*ls[:4], ls[4][: len(ls[4]) // 2] + "\n", *ls[5:]],
                         "agent.jsonl: line 5: not JSON"),
    "a line that is not an object": (lambda ls: [*ls[:2], "[1, 2]\n", *ls[3:]],
                                     "agent.jsonl: line 3: not a JSON object"),
    "a line without a type": (lambda ls: [*ls[:2], '{"message": {}}\n', *ls[3:]],
                              'line 3: no "type"'),
    "a line nested 100,000 deep": (lambda ls: [*ls[:1], "[" * 100_000 + "\n", *ls[1:]],
                                   "line 2: nested more than 32 levels deep"),
    "a time that is not a time": (lambda ls: _changed(ls, 3, timestamp="yesterday"),
                                  'line 4: "timestamp" is not an ISO 8601 time'),
    "a time without a zone": (lambda ls: _changed(ls, 3, timestamp="2026-01-01T10:00:00"),
                              'line 4: "timestamp" has no time zone'),
    "content of the wrong shape": (lambda ls: _changed(ls, 1, message={"content": 7}),
                                   'line 2: "message.content" is neither text nor a list'),
    "a block without a type": (lambda ls: _changed(ls, 1, message={"content": [{"x": 1}]}),
                               "line 2: a content block without a type"),
    "a tool call without an id": (
        lambda ls: _changed(ls, 1, message={"content": [{"type": "tool_use", "name": "x"}]}),
        "line 2: a tool call without a string id and name"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_transcript_is_refused_naming_the_line(damage: str, tmp_path: Path) -> None:
    change, message = DAMAGES[damage]
    path = tmp_path / "agent.jsonl"
    path.write_text("".join(change(_lines())))

    result = subprocess.run([PLANLEDGER, "replay", "timeline", "--transcript", str(path),
                             "--transcript", str(B), str(RECORDING)],
                            capture_output=True, text=True, check=False)

    assert result.returncode == 1, result.stdout + result.stderr
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_bytes_that_are_not_utf8_are_refused_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "agent.jsonl"
    lines = _lines()
    path.write_bytes("".join(lines[:2]).encode() + b'{"type": "user\xff\xfe"}\n')

    result = runner.invoke(app, ["replay", "timeline", "--transcript", str(path),
                                 str(RECORDING)])

    assert result.exit_code == 1
    assert "agent.jsonl: line 3 is not UTF-8 text" in result.output


def test_a_line_longer_than_the_limit_is_refused_without_reading_it_whole(tmp_path: Path,
                                                                         ) -> None:
    path = tmp_path / "agent.jsonl"
    with path.open("w") as out:
        out.write(_lines()[0])
        out.write('{"type": "user", "pad": "' + "x" * MAX_LINE_BYTES + '"}\n')

    result = runner.invoke(app, ["replay", "timeline", "--transcript", str(path),
                                 str(RECORDING)])

    assert result.exit_code == 1
    assert f"agent.jsonl: line 2 is longer than {MAX_LINE_BYTES} bytes" in result.output


def test_too_many_transcripts_at_once_are_refused() -> None:
    result = runner.invoke(app, ["replay", "timeline", *(["--transcript", str(A)] * 17),
                                 str(RECORDING)])

    assert result.exit_code == 1
    assert "17 transcripts: at most 16 at once" in result.output


def test_a_missing_transcript_is_refused_by_name(tmp_path: Path) -> None:
    result = runner.invoke(app, ["replay", "timeline", "--transcript",
                                 str(tmp_path / "nope.jsonl"), str(RECORDING)])

    assert result.exit_code == 1
    assert "cannot read" in result.output and "nope.jsonl" in result.output


def _hostile(tmp_path: Path, token: str) -> Path:
    """Agent A's transcript with a tool call that would do harm if run, markup in its
    prose, and its token repeated where an agent might repeat it."""
    lines = [json.loads(line) for line in _lines()]
    stamp = lines[-1]["timestamp"]
    pwned = tmp_path / "pwned"
    extra = [
        {"type": "assistant", "timestamp": stamp, "sessionId": lines[0]["sessionId"],
         "message": {"role": "assistant", "content": [
             {"type": "text", "text": f"<script>alert(1)</script> my token is {token}"},
             {"type": "tool_use", "id": "toolu_x", "name": "Bash",
              "input": {"command": f"touch {pwned}; planledger --token {token} claim 5"}},
             {"type": "tool_use", "id": "toolu_y", "name": "mcp__planledger__tasks_list",
              "input": {"token": token}}]}},
    ]
    path = tmp_path / "agent.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [*lines, *extra]))
    return path


def _token() -> str:
    """The token session_start answered agent A (it is in the transcript)."""
    for line in _lines():
        if "tool_result" in line and '\\"token\\"' in line:
            return str(json.loads(json.loads(line)["message"]["content"][0]["content"][0]
                                  ["text"])["token"])
    raise AssertionError("no session_start answer")


@pytest.mark.parametrize("output", [[], ["--json"], ["--html"]])
def test_tokens_in_transcripts_are_masked_and_nothing_in_them_runs(
    output: list[str], tmp_path: Path,
) -> None:
    token = _token()
    session, signature = token.split(".")
    path = _hostile(tmp_path, token)

    result = runner.invoke(app, ["replay", "timeline", "--transcript", str(path),
                                 "--transcript", str(B), str(RECORDING), *output],
                           env={"COLUMNS": "400"})

    assert result.exit_code == 0, result.output
    assert signature not in result.output
    assert f"{session}.[masked]" in result.output
    assert "--token [masked]" in result.output or output == []  # the terminal folds calls
    assert not (tmp_path / "pwned").exists()
    if output == ["--html"]:
        assert "<script>" not in result.output
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in result.output


def test_tokens_are_copied_only_when_asked_for(tmp_path: Path) -> None:
    token = _token()
    path = _hostile(tmp_path, token)

    shown = runner.invoke(app, ["replay", "timeline", "--transcript", str(path),
                                "--transcript", str(B), str(RECORDING), "--json",
                                "--show-secrets"])

    assert shown.exit_code == 0
    assert f"my token is {token}" in shown.output


SECRETS_IN_COMMANDS = {
    "admin-secret-0123456789abcdef0123456789": "PLANLEDGER_ADMIN_TOKEN={}",
    "lower-case-bearer-0123456789abcdef": "curl -H 'authorization: bearer {}' http://x",
    "plk_AbCdEf0123456789-_AbCdEf0123456789AbCdEf01234": "echo {} > key.txt",
    "key-in-env-0123456789abcdef0123": "export PLANLEDGER_KEY='{}'",
    "a-secret-of-many-bytes-0123456789abcdef": "PLANLEDGER_SECRET=\"{}\" planledger serve",
}


@pytest.mark.parametrize("output", [[], ["--json"], ["--html"]])
def test_secrets_in_shell_commands_are_masked(output: list[str], tmp_path: Path) -> None:
    # an agent's Bash calls carry credentials in environment assignments and headers
    lines = [json.loads(line) for line in _lines()]
    calls = [{"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
              "input": {"command": shape.format(secret)}}
             for n, (secret, shape) in enumerate(SECRETS_IN_COMMANDS.items())]
    prose = {"type": "text", "text": " and ".join(SECRETS_IN_COMMANDS.values()).format(
        *SECRETS_IN_COMMANDS)}
    lines.append({"type": "assistant", "timestamp": lines[-1]["timestamp"],
                  "sessionId": lines[0]["sessionId"],
                  "message": {"role": "assistant", "content": [prose, *calls]}})
    path = tmp_path / "agent.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    result = runner.invoke(app, ["replay", "timeline", "--transcript", str(path),
                                 "--transcript", str(B), str(RECORDING), *output],
                           env={"COLUMNS": "400"})

    assert result.exit_code == 0, result.output
    leaked = [secret for secret in SECRETS_IN_COMMANDS if secret in result.output]
    assert leaked == []
    if output:  # the terminal folds tool calls; JSON and HTML keep them
        assert "PLANLEDGER_ADMIN_TOKEN=[masked]" in result.output
