"""The program: the `planledger` command line (the `planledger` script, `python -m
planledger`), read from one table of verbs (`TABLE`) assembled here from each part's. The
interfaces' (api.cli) never import the replays' or the benchmarks', which stand beside
them (ARCHITECTURE.md): the three meet only here.

A call imports only the verb it names (`planledger claim …` loads api/cli/calls.py and
what its answer needs, not the web server, the MCP stack or the replays), and every help
is printed from the table without importing any: agents that drive the ledger through a
shell pay the start-up on every call (bench/startup.py measures it).
"""

import sys

from planledger.api.cli import GROUPS as INTERFACE_GROUPS
from planledger.api.cli import HELP
from planledger.api.cli import VERBS as INTERFACE_VERBS
from planledger.api.cli.grammar import CommandLine, Verb, load
from planledger.api.cli.parser import (
    EXIT_USAGE,
    UsageError,
    asks_help,
    group_help,
    program_help,
    read,
    refuse,
    verb_help,
)
from planledger.replays.verbs import GROUPS as REPLAY_GROUPS
from planledger.replays.verbs import VERBS as REPLAY_VERBS

EXIT_READER_GONE = 1  # as a refusal: what was asked for was not all printed

TABLE = CommandLine(HELP, (*INTERFACE_GROUPS, *REPLAY_GROUPS), (
    *INTERFACE_VERBS,
    *REPLAY_VERBS,
    Verb(("bench",), "planledger.bench.cli:bench",
         "Run the benchmarks: the same arguments as `python -m planledger.bench` (see "
         "bench/README.md).", passthrough=True),
))


def main(argv: list[str] | None = None) -> None:
    try:
        code = run(sys.argv[1:] if argv is None else argv)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (`| head`): the rest goes unread
        from planledger.api.cli import output

        output.reader_gone()
        code = EXIT_READER_GONE
    raise SystemExit(code)


def run(args: list[str]) -> int:
    """Run the call `args` (the words after `planledger`); its exit code."""
    try:
        return _run(args)
    except UsageError as error:
        return refuse(TABLE, error)


def _run(args: list[str]) -> int:
    if not args or args[0] in ("--help", "-h"):
        sys.stdout.write(program_help(TABLE))
        return 0 if args else EXIT_USAGE  # no words at all: a usage error, as git says
    if args[0].startswith("-"):
        return _program_option(args)
    verb = TABLE.named(args)
    if verb is None:
        return _group_or_unknown(args)
    rest = args[len(verb.words):]
    if verb.before is not None:
        load(verb.before)(rest)
    if verb.passthrough:
        return int(load(verb.target)({"words": verb.words, "args": rest}) or 0)
    if asks_help(rest):
        sys.stdout.write(verb_help(verb))
        return 0
    values = read(verb, rest)
    return int(load(verb.target)(values) or 0)


def _group_or_unknown(args: list[str]) -> int:
    word = args[0]
    if TABLE.group(word) is None:
        raise UsageError(f"no such command {word!r}{_did_you_mean(word, TABLE.top())}")
    rest = args[1:]
    if not rest or asks_help(rest[:1]):
        sys.stdout.write(group_help(TABLE, word))
        return 0 if rest else EXIT_USAGE
    names = [(v.words[1], "") for v in TABLE.in_group(word)]
    raise UsageError(f"no such command {rest[0]!r} in '{word}'"
                     f"{_did_you_mean(rest[0], names)}", (word,))


def _did_you_mean(word: str, rows: list[tuple[str, str]]) -> str:
    import difflib

    close = difflib.get_close_matches(word, [name for name, _ in rows], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _program_option(args: list[str]) -> int:
    option = args[0]
    if option == "--version":
        from planledger import __version__

        sys.stdout.write(f"planledger {__version__}\n")
        return 0
    if option in ("--show-completion", "--install-completion"):
        from planledger.api.cli import completion

        return completion.run(TABLE, install=option == "--install-completion")
    raise UsageError(f"no such option: {option}")
