"""The command line's one table (planledger.main.TABLE) is true to the code it names, and
every help printed from it tells a new user what each verb takes (issue 29)."""

import subprocess
import sys

import pytest

from planledger.api.cli.grammar import load
from planledger.api.http.paths import REQUESTS
from planledger.ledger import commands as c
from planledger.main import TABLE
from tests.support.cli_runner import CliRunner

runner = CliRunner()
VERBS = [verb.words for verb in TABLE.verbs]


def test_each_verb_is_in_the_table_once_and_runs_code_that_exists() -> None:
    assert len(VERBS) == len(set(VERBS))
    for verb in TABLE.verbs:
        assert callable(load(verb.target)), verb.name
        if verb.before is not None:
            assert callable(load(verb.before)), verb.name
    for verb in TABLE.verbs:
        if len(verb.words) == 2:
            assert TABLE.group(verb.words[0]) is not None, f"no group for {verb.name}"


def test_every_ledger_command_has_a_request() -> None:
    assert set(REQUESTS) == {command.name for command in c.COMMANDS}


def test_the_programs_help_lists_every_verb_and_group_with_its_summary() -> None:
    shown = runner.invoke(None, ["--help"])
    assert shown.exit_code == 0
    text = " ".join(shown.stdout.split())
    for name, summary in TABLE.top():
        assert f"{name} {' '.join(summary.split())}" in text, name


@pytest.mark.parametrize("words", VERBS, ids=[" ".join(w) for w in VERBS])
def test_each_verbs_help_names_and_describes_all_it_takes(words: tuple[str, ...]) -> None:
    verb = TABLE.named(words)
    assert verb is not None
    shown = runner.invoke(None, [*words, "--help"])
    assert shown.exit_code == 0, shown.output
    if verb.passthrough:  # its own harness answers (`python -m planledger.bench`)
        return
    assert shown.stdout.startswith(f"Usage: planledger {verb.name}")
    for argument in verb.arguments:
        assert argument.help and argument.metavar.isupper(), (verb.name, argument)
        assert argument.metavar in shown.stdout
    for option in verb.options:
        assert option.help, (verb.name, option.flag)
        assert option.shown in shown.stdout, (verb.name, option.flag)
    assert "list[" not in shown.stdout and "<bool>" not in shown.stdout


def test_a_flag_takes_no_value_and_a_bad_call_exits_2_naming_the_problem() -> None:
    refused = runner.invoke(None, ["demo", "--race", "true"])
    assert refused.exit_code == 2
    assert "unrecognized arguments: true" in refused.stderr
    assert "Usage: planledger demo" in refused.stderr
    missing = runner.invoke(None, ["claim"])
    assert missing.exit_code == 2 and "STEP" in missing.stderr
    not_a_number = runner.invoke(None, ["claim-next", "p", "--wait", "soon"])
    assert not_a_number.exit_code == 2 and "'soon' is not a whole number" in not_a_number.stderr
    unknown = runner.invoke(None, ["clam", "x"])
    assert unknown.exit_code == 2 and "did you mean 'claim'" in unknown.stderr
    assert runner.invoke(None, []).exit_code == 2
    group = runner.invoke(None, ["db"])
    assert group.exit_code == 2 and "init" in group.stdout


def test_db_init_and_status_show_the_db_they_take() -> None:
    for words in (["db", "init"], ["db", "status"]):
        assert "--db STORE" in runner.invoke(None, [*words, "--help"]).stdout


def test_the_completion_script_offers_every_verb_and_its_options() -> None:
    shown = runner.invoke(None, ["--show-completion"])
    assert shown.exit_code == 0
    for verb in TABLE.verbs:
        assert f'"{verb.name}")' in shown.stdout, verb.name
    assert "--shared-path" in shown.stdout
    checked = subprocess.run(["bash", "-n"], input=shown.stdout, text=True,
                             capture_output=True, check=False)
    assert checked.returncode == 0, checked.stderr


def test_help_imports_no_verb_and_nothing_heavy() -> None:
    probe = ("import sys\n"
             "from planledger.main import main\n"
             "for args in (['--help'], ['claim', '--help'], ['plan', '--help']):\n"
             "    try:\n        main(args)\n    except SystemExit as done:\n"
             "        assert done.code == 0\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('typer', 'click', 'rich', 'pydantic', 'httpx', 'eventsourcing')"
             " or (m.startswith('planledger.api.cli.') and m not in "
             "('planledger.api.cli.grammar', 'planledger.api.cli.parser'))))\n")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            check=True, timeout=120)
    assert loaded.stdout.strip().endswith("[]"), loaded.stdout + loaded.stderr
