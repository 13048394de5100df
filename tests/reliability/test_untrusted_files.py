"""Recordings and plan files from untrusted sources: malformed lines, a newer schema, an event
type that names some other module (decoding would import it), odd files and paths — each
refused with a message, and nothing imported or created half-way."""

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from planledger.api.runtime import open_runtime
from planledger.main import run as app
from planledger.replays.fixture import seed_auth_refresh
from planledger.replays.format import write_file
from planledger.replays.recording import export
from tests.support.cli_runner import CliRunner
from tests.support.fakes import FakeClock, SequentialIds

runner = CliRunner()
PLANLEDGER = str(Path(sys.executable).parent / "planledger")
Damage = Callable[[list[str]], list[str]]


@pytest.fixture
def lines(tmp_path: Path, clock: FakeClock) -> list[str]:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    seed_auth_refresh(runtime.ledger, race=True)
    path = tmp_path / "good.jsonl"
    write_file(export(runtime.store), path)
    runtime.close()
    return path.read_text().splitlines(keepends=True)


def _event_at(lines: list[str], n: int) -> int:
    return [i for i, line in enumerate(lines) if '"type":"event"' in line][n]


def _with(lines: list[str], index: int, **changes: object) -> list[str]:
    event = {**json.loads(lines[index]), **changes}
    return [*lines[:index], json.dumps(event) + "\n", *lines[index + 1:]]


DAMAGES: dict[str, tuple[Damage, str]] = {
    "a topic naming another module": (
        lambda ls: _with(ls, _event_at(ls, 3), topic="this:s"), 'unknown event type "this:s"'),
    "a topic naming a builtin": (
        lambda ls: _with(ls, _event_at(ls, 0), topic="builtins:eval"),
        'unknown event type "builtins:eval"'),
    "a line cut short": (lambda ls: [*ls[:5], ls[5][: len(ls[5]) // 2] + "\n", *ls[6:]],
                         "line 6: not JSON"),
    "a newer schema": (lambda ls: [ls[0].replace('"schema":1', '"schema":99'), *ls[1:]],
                       "schema version 99 is newer"),
    "a line that is not an object": (lambda ls: [*ls[:3], "[1, 2]\n", *ls[4:]],
                                     "line 4: not a JSON object"),
    "a state of the wrong shape": (
        lambda ls: _with(ls, _event_at(ls, 2), state={"no": "fields"}), "cannot be read"),
    "binary junk": (lambda ls: [*ls[:2], "\x00\x01\x02\n", *ls[2:]], "line 3"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_or_hostile_recording_is_refused_and_nothing_is_imported(
    damage: str, lines: list[str], tmp_path: Path,
) -> None:
    change, message = DAMAGES[damage]
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(change(lines)))
    db = str(tmp_path / "target.sqlite")
    # A fresh interpreter, so a module a topic names would be imported for the first time.
    result = subprocess.run([PLANLEDGER, "replay", "import", str(path), "--db", db],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert message in result.stderr, result.stderr
    assert "Beautiful is better than ugly" not in result.stdout + result.stderr  # `this` ran
    runtime = open_runtime(db)
    assert not runtime.store.recorder.max_notification_id()
    runtime.close()


def test_a_recording_path_that_is_not_a_readable_file_is_refused(tmp_path: Path) -> None:
    for path in (tmp_path, tmp_path / "missing.jsonl", Path("/dev/null")):
        result = runner.invoke(app, ["replay", "import", str(path), "--db", "memory"])
        assert result.exit_code == 1 and result.output.strip(), path


PLANS: dict[str, tuple[str, str, str]] = {
    "not YAML": ("plan.yaml", "slug: [unclosed\n", "not valid YAML"),
    "a list, not a plan": ("plan.yaml", "- a\n- b\n", "plan file"),
    "an unknown field": ("plan.yaml", "slug: p\ntitle: t\nrun: rm -rf /\n", "run"),
    "a step of the wrong type": ("plan.yaml", "slug: p\ntitle: t\nsteps: [3]\n", "steps.0"),
    "a python tag": ("plan.yaml", "slug: !!python/object/apply:os.system ['true']\ntitle: t\n",
                     "not valid YAML"),
    "a bad slug": ("plan.md", "# T\nslug: ../../etc\n## Steps\n1. a\n", "slug"),
    "a later step over the limit": (
        "plan.md", "# T\nslug: half\n## Steps\n1. fine\n2. " + "x" * 400 + "\n", "title"),
    "an unknown dependency": ("plan.md", "# T\nslug: half2\n## Steps\n1. a (after: nope)\n",
                              "nope"),
    "not UTF-8": ("plan.md", "\udcff", "cannot read"),
}


@pytest.mark.parametrize("case", list(PLANS))
def test_a_bad_plan_file_is_refused_naming_the_problem_and_creates_nothing(
    case: str, tmp_path: Path,
) -> None:
    name, text, message = PLANS[case]
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    db = str(tmp_path / "ledger.sqlite")

    result = runner.invoke(app, ["plan", "create", str(path), "--db", db])

    assert result.exit_code == 1, result.output
    assert message in result.output, result.output
    runtime = open_runtime(db)
    assert not runtime.store.recorder.max_notification_id()
    runtime.close()
