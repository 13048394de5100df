"""The command line's table (planledger.main.ENTRIES) is true to the code it names: every
command is in it, each summary is its help's first paragraph, and `planledger --help`,
printed from the table alone, lists them all without importing any command."""

import subprocess
import sys

import typer
from typer.main import get_command

from planledger.main import ENTRIES, build, usage


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").strip().split("\n\n")[0].split())


def _help_of(target: object) -> str:
    if isinstance(target, typer.Typer):
        return _first_paragraph(target.info.help)
    return _first_paragraph(getattr(target, "__doc__", None))


def test_every_command_of_the_whole_command_line_is_in_the_table_once() -> None:
    whole = get_command(build())
    names = [entry.name for entry in ENTRIES]
    assert len(names) == len(set(names))
    assert sorted(whole.commands) == sorted(names)  # type: ignore[attr-defined]


def test_each_summary_is_the_first_paragraph_of_its_commands_help() -> None:
    for entry in ENTRIES:
        assert entry.summary == _help_of(entry.load()), entry.name


def test_help_lists_every_command_with_its_summary() -> None:
    text = " ".join(usage().split())
    for entry in ENTRIES:
        assert f"{entry.name} {entry.summary}" in text


def test_help_imports_no_command_and_no_command_line_library() -> None:
    probe = ("import sys\n"
             "from planledger.main import main\n"
             "try:\n    main(['--help'])\nexcept SystemExit as done:\n"
             "    assert done.code == 0\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('typer', 'click', 'rich', 'pydantic', 'httpx', 'eventsourcing')"
             " or m.startswith('planledger.api.cli.')))\n")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, timeout=120)
    assert loaded.stdout.strip().endswith("[]"), loaded.stdout + loaded.stderr
