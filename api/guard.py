"""The commit guard: a git pre-commit hook that refuses a commit touching paths another
session holds exclusively.

`install` writes the hook into a repository (where git looks for hooks: `core.hooksPath`
is honoured); at commit time the hook runs `planledger guard check`, which lists the paths
the commit changes against its first parent (the index against HEAD: for a merge, what the
merge changes on this branch, not every file the merged branch ever touched) and asks the
ledger, on the embedded store or a server, which live exclusive reservations of other
sessions cover them. Any: the commit is refused, naming each file, pattern, holder and
step. The ledger unreachable (no store file, no server, any failure to ask): the commit
goes ahead with a warning, unless the hook was installed to fail closed. A commit that
touches only unreserved paths is never refused.

`install` also writes the hooks that add Planledger-* trailers to a commit made under a
live claim (api.commit_trailers), which `planledger audit git` reads back; they never
refuse a commit.
"""

import shlex
import stat
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from planledger.api.schemas import PathsCheckOut, ReservationOut
from planledger.ledger.domain.paths import covers
from planledger.ledger.domain.texts import shown_on_one_line

HOOK_MARK = "# planledger commit guard"
HOOKS = ("pre-commit", "pre-merge-commit")
# The hooks that add the Planledger-* trailers (api.commit_trailers): before the message is
# edited, for a message given with -m, -F, an amend or a merge; after, for one written in
# the editor. `--no-verify` skips commit-msg, never prepare-commit-msg.
TRAILER_HOOKS = ("prepare-commit-msg", "commit-msg")
CHAINED_SUFFIX = ".pre-planledger"  # a hook that was there before the guard, run first
CHECK_BATCH = 10_000  # files per question to the ledger (POST /api/reservations/check's cap)


class GuardError(Exception):
    """The guard cannot be installed or cannot read the repository; says why."""


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                              check=True)
    except FileNotFoundError:
        raise GuardError("git is not installed (or not on PATH)") from None
    except subprocess.CalledProcessError as failed:
        said = failed.stderr.decode("utf-8", "replace").strip()
        raise GuardError(f"git {' '.join(args)} failed in {repo}: {said}") from None
    return done.stdout.decode("utf-8", "surrogateescape")


# --- installing ------------------------------------------------------------------------


def hook_text(store: Sequence[str], fail_closed: bool, chained: Path | None = None) -> str:
    """The hook: this Python running `planledger guard check` against `store` (the
    `--db PATH` or `--url URL` arguments it was installed with), after the repository's
    own hook `chained` (moved aside at install) when there was one: its refusal stands."""
    command = [sys.executable, "-m", "planledger", "guard", "check", *store]
    if fail_closed:
        command.append("--fail-closed")
    line = " ".join(shlex.quote(part) for part in command)
    # Run only while executable, as git runs a hook: one git ignored (its executable bit
    # off) must not start refusing every commit once chained.
    kept = "" if chained is None else shlex.quote(str(chained))
    first = "" if chained is None else (
        f"# the hook that was here before, kept and run first (as git would: if "
        f"executable):\n"
        f'if [ -x {kept} ]; then {kept} "$@" || exit $?; fi\n')
    return (f"#!/bin/sh\n{HOOK_MARK}: refuses a commit whose changes fall under another\n"
            "# session's live exclusive path reservation (`planledger guard install` wrote "
            "this;\n# PLANLEDGER_SESSION or PLANLEDGER_TOKEN names the committing session).\n"
            f'{first}exec {line} --repo "$(git rev-parse --show-toplevel)"\n')


def trailer_hook_text(store: Sequence[str], chained: Path | None = None) -> str:
    """The hook that adds the trailers: `planledger guard trailers` against `store`, after
    the repository's own hook `chained` (its refusal stands, as it would without us). Ours
    never refuses: whatever happens, the commit goes on."""
    command = [sys.executable, "-m", "planledger", "guard", "trailers", *store]
    line = " ".join(shlex.quote(part) for part in command)
    kept = "" if chained is None else shlex.quote(str(chained))
    first = "" if chained is None else (
        "# the hook that was here before, kept and run first (as git would: if "
        "executable):\n"
        f'if [ -x {kept} ]; then {kept} "$@" || exit $?; fi\n')
    return (f"#!/bin/sh\n{HOOK_MARK}: adds Planledger-Step, -Fence and -Session trailers "
            "to a commit\n# made by a session holding a live claim (`planledger guard "
            "install` wrote this;\n# PLANLEDGER_SESSION or PLANLEDGER_TOKEN names the "
            "session). It never refuses a commit.\n"
            f'{first}{line} --repo . -- "$@" || true\nexit 0\n')


def chained_path(hook: Path) -> Path:
    """Where `install` moves a hook that is not the guard's, to run it from the guard's."""
    return hook.with_name(f"{hook.name}{CHAINED_SUFFIX}")


def install(repo: Path, store: Sequence[str], fail_closed: bool = False,
            force: bool = False) -> list[Path]:
    """Write the hooks into the repository at `repo`: pre-commit, and pre-merge-commit (a
    merge that needs no hand is committed by `git merge`, which runs only that one), and
    the trailers' prepare-commit-msg and commit-msg; their paths. A hook that is not the
    guard's is moved beside it (`<hook>.pre-planledger`) and run first by the guard's,
    unless `force` replaces it."""
    hooks = Path(_git(repo, "rev-parse", "--git-path", "hooks").strip())
    if not hooks.is_absolute():
        hooks = (repo / hooks).resolve()
    written = [hooks / name for name in (*HOOKS, *TRAILER_HOOKS)]
    for hook in written:
        if _foreign(hook) and _there(chained_path(hook)) and not force:
            raise GuardError(f"{hook} is not planledger's, and {chained_path(hook)} holds "
                             "the hook chained before it: merge the two by hand, or pass "
                             "--force to replace it")
    hooks.mkdir(parents=True, exist_ok=True)
    for hook in written:
        if _foreign(hook) and not force:
            hook.replace(chained_path(hook))  # kept, executable as it was
        chained = chained_path(hook) if _there(chained_path(hook)) and not force else None
        if hook.is_symlink():
            hook.unlink()  # the guard's own file: never written into the file a link names
        text = (trailer_hook_text(store, chained) if hook.name in TRAILER_HOOKS
                else hook_text(store, fail_closed, chained))
        hook.write_text(text)
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return written


def _there(path: Path) -> bool:
    """A file, or a symlink even when it names nothing."""
    return path.exists() or path.is_symlink()


def _foreign(hook: Path) -> bool:
    """A hook that is not the guard's: a symlink naming nothing (git skips it, and so does
    the guard's once chained) is one."""
    if hook.is_symlink() and not hook.exists():
        return True
    return hook.exists() and HOOK_MARK not in hook.read_text(errors="replace")


# --- checking ----------------------------------------------------------------------------


def changed_files(repo: Path) -> list[str]:
    """The paths the commit being made changes against its first parent (HEAD), deletions
    included, a rename as both its paths; against nothing for a first commit."""
    listed = _git(repo, "diff", "--cached", "--name-only", "--no-renames", "-z")
    return [p for p in listed.split("\0") if p]


@dataclass(frozen=True)
class Refusal:
    """A file the commit changes under another session's live exclusive reservation."""

    file: str
    pattern: str
    held: ReservationOut

    def describe(self) -> str:
        # Each text on one line whatever the store holds: a title must not forge a line.
        named = f"{shown_on_one_line(self.held.holder_name)}, " if self.held.holder_name else ""
        return (f'{shown_on_one_line(self.file)}: "{self.pattern}" is held by '
                f'"{self.held.holder}" ({named}step {self.held.ref or self.held.step_id} '
                f'"{shown_on_one_line(self.held.title)}") until '
                f"{self.held.expires_at.isoformat()}")


Ask = Callable[[Sequence[str]], PathsCheckOut]


def refusals(files: Sequence[str], ask: Ask) -> list[Refusal]:
    """What refuses a commit changing `files`: `ask` answers, for a batch of files, the
    live exclusive reservations of other sessions that cover any of them."""
    found = []
    for start in range(0, len(files), CHECK_BATCH):
        batch = files[start:start + CHECK_BATCH]
        asked = [as_text(f) for f in batch]
        for held in ask(asked).reserved:
            exclusive = [p.pattern for p in held.paths if p.mode == "exclusive"]
            found += [Refusal(f, p, held) for f, text in zip(batch, asked, strict=True)
                      for p in exclusive if covers(p, text)]
    return found


def as_text(path: str) -> str:
    """A file's path as text the ledger takes: git's bytes that are no UTF-8 (kept as
    surrogate escapes) become U+FFFD, each one character as it was one byte. No pattern
    names such a byte, so what covers the path covers it still."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def session_of(session: str | None, token: str | None) -> str | None:
    """The committing session: named, or the one its token names (`<id>.<signature>`)."""
    if session:
        return session
    return token.rpartition(".")[0] or None if token else None
