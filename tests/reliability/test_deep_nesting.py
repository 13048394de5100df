"""Files nested deeper than Python's stack: a recording line of 100,000 `[` and plan files
nested 50,000 deep are refused in one line naming the line, never with a RecursionError
traceback, by every command that reads them."""

import subprocess
import sys
from pathlib import Path

import pytest

PLANLEDGER = str(Path(sys.executable).parent / "planledger")
HEADER = ('{"type":"header","format":"planledger-recording","schema":1,"exported_at":null,'
          '"selection":{"plan":null,"sessions":[],"since":null,"until":null},'
          '"partial":false,"commands":0,"events":1}\n')


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PLANLEDGER, *args], capture_output=True, text=True, check=False)


def _refused_in_one_line(result: subprocess.CompletedProcess[str], names: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output and "RecursionError" not in output, output[-2000:]
    assert len(output.strip().splitlines()) == 1, output[-2000:]
    assert names in output, output


@pytest.mark.parametrize("line", ["[" * 100_000, '{"a":' * 100_000,
                                  "[" * 40 + "]" * 40])
@pytest.mark.parametrize("command", [("replay", "import"), ("replay", "timeline"),
                                     ("audit", "verify")])
def test_a_recording_line_nested_past_any_stack_is_refused_naming_the_line(
    line: str, command: tuple[str, str], tmp_path: Path,
) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(HEADER + line + "\n")
    extra = ("--db", str(tmp_path / "target.sqlite")) if command[1] == "import" else ()

    result = _run(*command, str(path), *extra)

    _refused_in_one_line(result, "line 2")
    assert "nested more than 32 levels deep" in result.stderr


PLANS = {
    "plan.json": "[" * 50_000,
    "flow.yaml": "slug: p\ntitle: " + "{a: " * 50_000,
    "block.yaml": "slug: p\ntitle: t\nsteps:\n" + "".join(
        " " * i + "- \n" for i in range(3_000)),
}


@pytest.mark.parametrize("name", list(PLANS))
def test_a_plan_file_nested_past_any_stack_is_refused_naming_the_line(
    name: str, tmp_path: Path,
) -> None:
    path = tmp_path / name
    path.write_text(PLANS[name])

    result = _run("plan", "create", str(path), "--db", str(tmp_path / "ledger.sqlite"))

    _refused_in_one_line(result, "nested more than 32 levels deep")
    assert "line " in result.stderr
