"""The command line's grammar as data: verbs, their arguments and their options.

A verb is a command such as `claim` or `plan create`. Each verb, argument and option
carries the one line of help that a person reads.

The program's table of verbs (planledger.main.VERBS) is built from these types. The parser
(api.cli.parser), every `--help`, the shell completion script and the reference page all
read that one table, so they cannot disagree. This module uses the standard library only,
because every call of the command line imports it before anything else.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple

Values = dict[str, Any]  # a call's arguments and options by name, as its verb reads them


class Argument(NamedTuple):
    """A positional argument.

    With `many`, the call may give any number of them; such an argument comes last. With
    `optional`, the call may leave it out, and its value is then None."""

    name: str
    metavar: str
    help: str
    many: bool = False
    optional: bool = False


class Option(NamedTuple):
    """An option of a verb.

    - `kind` is 'str', 'int' (within `low`..`high` when given), 'float', 'flag' (no
      value) or 'list' (repeat the option for more strings).
    - `env` names an environment variable read when the option is not given. An empty
      variable counts as not set.
    - `aliases` are other spellings of the same option.
    - `required` means the call must give it."""

    flag: str
    name: str
    help: str
    kind: str = "str"
    metavar: str = ""
    env: str | None = None
    default: Any = None
    low: int | None = None
    high: int | None = None
    aliases: tuple[str, ...] = ()
    required: bool = False

    @property
    def shown(self) -> str:
        """The option as help prints it: its flag(s), then its value's name."""
        flags = ", ".join((self.flag, *self.aliases))
        return flags if self.kind == "flag" else f"{flags} {self.value_name}"

    @property
    def value_name(self) -> str:
        return self.metavar or {"int": "N", "float": "SECONDS"}.get(self.kind, "TEXT")


class Verb(NamedTuple):
    """A command of the command line, such as `claim` or `plan create`.

    - `words` name it.
    - `target` is the 'module:function' that runs it. The function gets the call's
      Values and returns the exit code (None means 0).
    - `help` is its help text; the first paragraph is its summary in the list of verbs.
    - `arguments` and `options` are what it takes.
    - With `passthrough`, every word after the name goes to the function untouched
      (`bench` uses this, because its harness has its own options).
    - `before` is a 'module:function' called with the raw arguments before the verb is
      parsed or loaded (`mcp` answers its client's handshake there)."""

    words: tuple[str, ...]
    target: str
    help: str
    arguments: tuple[Argument, ...] = ()
    options: tuple[Option, ...] = ()
    passthrough: bool = False
    before: str | None = None

    @property
    def name(self) -> str:
        return " ".join(self.words)

    @property
    def summary(self) -> str:
        return self.help.split("\n\n", 1)[0].replace("\n", " ")


class Group(NamedTuple):
    """A word that only groups verbs (`plan`, `db`): its summary in the verbs' list."""

    word: str
    help: str


def load(target: str) -> Any:
    """Import the module of a 'module:attribute' name, and return the attribute."""
    from importlib import import_module

    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


# --- the options many verbs share -----------------------------------------------------

DB = Option("--db", "db", "The embedded store: an SQLite path (default "
            "./.planledger/ledger.sqlite), 'memory', or a postgresql:// URL.",
            metavar="STORE", env="PLANLEDGER_DB")
URL = Option("--url", "url", "A running server (e.g. http://127.0.0.1:8765); without it "
             "the command works on the embedded store directly.", metavar="URL",
             env="PLANLEDGER_URL")
JSON = Option("--json", "json", "Print JSON for scripts.", kind="flag")
SESSION = Option("--session", "session", "The session to act for, by its id (on the "
                 "embedded store).", metavar="SESSION", env="PLANLEDGER_SESSION")
TOKEN = Option("--token", "token", "The session's token (from `session start`); needed "
               "with --url.", metavar="TOKEN", env="PLANLEDGER_TOKEN")
LEASE = Option("--lease", "lease_seconds", "The lease in seconds (the server's default "
               "when left out).", kind="int", metavar="SECONDS")
FENCE = Option("--fence", "fence", "The fence your claim was granted: refused if it is "
               "stale.", kind="int", metavar="FENCE")
NOTE = Option("--note", "note", "A handoff note left with it, for whoever picks the step "
              "up next.", metavar="TEXT")
LEASE_DEFAULT = Option("--lease-default", "lease_default", "The lease of a claim that "
                       "names none, in seconds (default 900).", kind="int",
                       metavar="SECONDS", env="PLANLEDGER_LEASE_DEFAULT")

READING = (DB, URL, JSON)  # a read: from the store or a server, printed for people or JSON
ACTING = (DB, URL, SESSION, TOKEN, JSON)  # a write, or a read, for a session

STEP = Argument("step_id", "STEP", "The step: its reference (`auth-refresh#5`, "
               "`auth-refresh/limit`, a bare key) or its id.")
PLAN = Argument("plan", "PLAN", "The plan's slug.")


class CommandLine(NamedTuple):
    """The whole table: the program's one-line help, its groups and its verbs."""

    help: str
    groups: tuple[Group, ...]
    verbs: tuple[Verb, ...]

    def named(self, words: Sequence[str]) -> Verb | None:
        """The verb named by the first words of a call, if any. Two-word verbs match first."""
        for verb in self.verbs:
            if tuple(words[:len(verb.words)]) == verb.words:
                return verb
        return None

    def group(self, word: str) -> Group | None:
        return next((g for g in self.groups if g.word == word), None)

    def in_group(self, word: str) -> tuple[Verb, ...]:
        return tuple(v for v in self.verbs if len(v.words) == 2 and v.words[0] == word)

    def top(self) -> list[tuple[str, str]]:
        """What the program's help lists, in the table's order: each one-word verb and
        each group, with its summary."""
        rows: list[tuple[str, str]] = []
        for verb in self.verbs:
            word = verb.words[0]
            if len(verb.words) == 1:
                rows.append((word, verb.summary))
            elif word not in (name for name, _ in rows):
                group = self.group(word)
                rows.append((word, group.help if group else ""))
        return rows
