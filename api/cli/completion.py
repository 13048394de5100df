"""Shell completion for the command line, written from its table of verbs: the words of
every verb and the options each takes, completed by bash (and by zsh through its
`bashcompinit`). The script needs nothing of Python to run, so a Tab costs no start-up.

`planledger --show-completion` prints it; `planledger --install-completion` writes it
where bash-completion loads a user's own completions from on demand.
"""

import os
import sys
from pathlib import Path

from planledger.api.cli.grammar import CommandLine, Verb

FUNCTION = "_planledger_complete"


def script(table: CommandLine) -> str:
    """The bash completion script for `table`: a verb's options once its words are typed,
    a group's verbs after the group, the top words first."""
    def case(name: str, words: str) -> str:
        return f'        "{name}") words="{words}" ;;'

    def flags(verb: Verb) -> str:
        return " ".join([*(f for o in verb.options for f in (o.flag, *o.aliases)), "--help"])

    top = " ".join(name for name, _ in table.top())
    two = [case(v.name, flags(v)) for v in table.verbs if len(v.words) == 2]
    one = [case(v.name, flags(v)) for v in table.verbs if len(v.words) == 1]
    one += [case(g.word, " ".join(v.words[1] for v in table.in_group(g.word)))
            for g in table.groups]
    return "\n".join([
        "# bash completion for planledger (from `planledger --show-completion`)",
        f"{FUNCTION}() {{",
        '    local current="${COMP_WORDS[COMP_CWORD]}" words',
        '    case "${COMP_WORDS[1]} ${COMP_WORDS[2]}" in', *two,
        '    *) case "${COMP_WORDS[1]}" in', *one,
        f'        *) words="{top}" ;;', "    esac ;;", "    esac",
        '    if [ "$COMP_CWORD" -eq 1 ]; then',
        f'        words="{top} --help --version --show-completion --install-completion"',
        "    fi",
        '    COMPREPLY=($(compgen -W "$words" -- "$current"))',
        '    if [ ${#COMPREPLY[@]} -eq 0 ]; then COMPREPLY=($(compgen -f -- "$current")); fi',
        "}",
        f"complete -o filenames -F {FUNCTION} planledger", ""])


def install_path() -> Path:
    """Where bash-completion looks for a user's own completions."""
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "bash-completion" / "completions" / "planledger"


def run(table: CommandLine, install: bool) -> int:
    """Print the script, or install it for the current user; the exit code."""
    text = script(table)
    if not install:
        sys.stdout.write(text)
        return 0
    path = install_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        sys.stderr.write(f"cannot write {path}: {error.strerror}\n")
        return 1
    sys.stdout.write(f"installed the bash completion in {path}; it is loaded in new shells "
                     "(with bash-completion; zsh: `autoload bashcompinit && bashcompinit` "
                     f"and `source {path}`)\n")
    return 0
