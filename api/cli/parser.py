"""Parse a command-line call against the table of verbs, and print help from that table.

The table's types live in api.cli.grammar. Every help text has the same style.

A call names its verb first (`planledger claim …`, `planledger plan show …`). Only that
verb's parser is built (argparse, from the standard library), so a call costs the same
however many verbs there are. `--help` (or `-h`) before any `--` prints the help of the
words before it and exits 0. A usage error (an unknown verb or option, a missing argument,
a value that is not a number or is out of range) prints the verb's usage and the error on
stderr, and exits 2, as the shells' own tools do.
"""

import argparse
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import NamedTuple, NoReturn

from planledger.api.cli.grammar import Argument, CommandLine, Option, Values, Verb

PROGRAM = "planledger"
EXIT_USAGE = 2
HELP = ("--help", "Show this help and exit.")
WIDTH = 88  # help is wrapped to this many columns


class UsageError(Exception):
    """A call that does not match the table: the message, and whose usage to show."""

    def __init__(self, message: str, words: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.words = words


def asks_help(args: Sequence[str]) -> bool:
    """Whether the call asks for help (`--help` or `-h` before any `--`)."""
    for arg in args:
        if arg == "--":
            return False
        if arg in ("--help", "-h"):
            return True
    return False


def read(verb: Verb, args: Sequence[str]) -> Values:
    """Parse `args`, the words after the verb, into the call's values by name.

    Options the call leaves out are read from their environment variables. Raises
    UsageError if the verb does not take these arguments."""
    try:
        values = vars(_parser(verb).parse_args(list(args)))
        for option in verb.options:  # a variable is read only where its flag was not given
            if isinstance(values.get(option.name), _FromEnv):
                values[option.name] = _number(option, f"${option.env}")(
                    values[option.name].text)
    except UsageError as error:
        raise UsageError(str(error), verb.words) from None
    values["words"] = verb.words
    return values


class _FromEnv(NamedTuple):
    """A number option's value from its environment variable.

    It is read after the command line, so a bad value is reported under the variable's
    name, and only when the option is actually used."""

    text: str


def _parser(verb: Verb) -> argparse.ArgumentParser:
    parser = _Parser(prog=f"{PROGRAM} {verb.name}", add_help=False, allow_abbrev=False)
    parser.words = verb.words
    for argument in verb.arguments:
        nargs = "*" if argument.many else "?" if argument.optional else None
        parser.add_argument(argument.name, metavar=argument.metavar, nargs=nargs)
    for option in verb.options:
        _add(parser, option)
    return parser


def _add(parser: argparse.ArgumentParser, option: Option) -> None:
    flags = (option.flag, *option.aliases)
    default = option.default
    if option.env is not None and os.environ.get(option.env):
        default = os.environ[option.env]
        if option.kind in ("int", "float"):
            default = _FromEnv(default)
    if option.kind == "flag":
        parser.add_argument(*flags, dest=option.name, action="store_true",
                            default=bool(default))
    elif option.kind == "list":
        parser.add_argument(*flags, dest=option.name, action="append", default=None,
                            metavar=option.value_name)
    else:
        kind = _number(option) if option.kind in ("int", "float") else str
        parser.add_argument(*flags, dest=option.name, type=kind, default=default,
                            metavar=option.value_name,
                            required=option.required and default is None)


def _number(option: Option, source: str | None = None) -> Callable[[str], int | float]:
    """Read the option's value as its kind of number, within its bounds.

    An error names `source` (where the value came from), or else the flag."""
    named = source or option.flag

    def number(text: str) -> int | float:
        try:
            value: int | float = int(text) if option.kind == "int" else float(text)
        except ValueError:
            raise UsageError(f"{named}: {text!r} is not "
                             f"{'a whole number' if option.kind == 'int' else 'a number'}"
                             ) from None
        low, high = option.low, option.high
        if (low is not None and value < low) or (high is not None and value > high):
            raise UsageError(f"{named}: {text} is not in {low}..{high}")
        return value

    return number


class _Parser(argparse.ArgumentParser):
    """argparse, changed to raise its errors instead of printing them and exiting.

    The command line can then word them like every other error."""

    words: tuple[str, ...] = ()

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.words)


# --- help, in one style ------------------------------------------------------------------


def _rows(pairs: Sequence[tuple[str, str]]) -> list[str]:
    column = min(max(len(name) for name, _ in pairs) + 4, 30)
    lines = []
    for name, text in pairs:
        lead = f"  {name}"
        if len(lead) > column - 2:
            lines.append(lead)
            lead = ""
        # Never break inside a word at its hyphen: `--discovered-from` and `in-progress`
        # must read (and be found by a search) whole.
        lines.append(textwrap.fill(text, WIDTH, initial_indent=f"{lead:<{column}}",
                                   subsequent_indent=" " * column, break_on_hyphens=False)
                     if text else lead)
    return lines


def _paragraphs(text: str) -> list[str]:
    return [textwrap.fill(" ".join(p.split()), WIDTH, initial_indent="  ",
                          subsequent_indent="  ", break_on_hyphens=False)
            for p in text.split("\n\n")]


def usage_line(verb: Verb) -> str:
    """`Usage: planledger claim STEP [OPTIONS]`: the verb's words, then what it takes."""
    taken = []
    for argument in verb.arguments:
        shown = f"{argument.metavar}..." if argument.many else argument.metavar
        taken.append(f"[{shown}]" if argument.many or argument.optional else shown)
    options = " [OPTIONS]" if verb.options else ""
    if verb.passthrough:
        options = " [ARGS]..."
    return f"Usage: {PROGRAM} {verb.name}{options} {' '.join(taken)}".rstrip()


def verb_help(verb: Verb) -> str:
    """What `planledger <verb> --help` prints."""
    lines = [usage_line(verb), "", *_paragraphs(verb.help), ""]
    if verb.arguments:
        lines += ["Arguments:", *_rows([(a.metavar, _argument_help(a))
                                        for a in verb.arguments]), ""]
    options = [(o.shown, _option_help(o)) for o in verb.options]
    lines += ["Options:", *_rows([*options, HELP]), ""]
    return "\n".join(lines)


def _argument_help(argument: Argument) -> str:
    return argument.help + (" (optional)" if argument.optional else "")


def _option_help(option: Option) -> str:
    text = option.help
    if option.kind == "list":
        text += " Repeat for more."
    if option.default not in (None, False):
        text += f" [default: {option.default}]"
    if option.env:
        text += f" [env: {option.env}]"
    return text


def group_help(table: CommandLine, word: str) -> str:
    """What `planledger <group> --help` (and `planledger <group>` alone) prints."""
    group = table.group(word)
    verbs = table.in_group(word)
    return "\n".join([
        f"Usage: {PROGRAM} {word} COMMAND [ARGS]...", "",
        *_paragraphs(group.help if group else ""), "", "Commands:",
        *_rows([(v.words[1], v.summary) for v in verbs]), "",
        f"Run '{PROGRAM} {word} COMMAND --help' for a command's arguments and options.", ""])


ROOT_OPTIONS = (
    ("--version", "Print the version and exit."),
    ("--show-completion", "Print the bash (and zsh) completion script, to copy it or "
                          "customize the installation."),
    ("--install-completion", "Install the completion script for the current user's "
                             "bash."),
    HELP,
)


def program_help(table: CommandLine) -> str:
    """What `planledger --help` (and `planledger` alone) prints."""
    return "\n".join([
        f"Usage: {PROGRAM} [OPTIONS] COMMAND [ARGS]...", "", f"  {table.help}", "",
        "Options:", *_rows(ROOT_OPTIONS), "", "Commands:", *_rows(table.top()), "",
        f"Run '{PROGRAM} COMMAND --help' for a command's arguments and options.", ""])


def refuse(table: CommandLine, error: UsageError) -> int:
    """Say what is wrong with the call, under the usage of the words it named: exit 2."""
    verb = table.named(error.words) if error.words else None
    if verb is not None:
        shown, words = usage_line(verb), verb.name
    elif error.words:
        shown, words = f"Usage: {PROGRAM} {error.words[0]} COMMAND [ARGS]...", error.words[0]
    else:
        shown, words = f"Usage: {PROGRAM} [OPTIONS] COMMAND [ARGS]...", ""
    helped = f"{PROGRAM} {words} --help".replace("  ", " ")
    sys.stderr.write(f"{shown}\nTry '{helped}' for help.\n\nError: {error}\n")
    return EXIT_USAGE
