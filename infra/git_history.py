"""A git repository's history, read for `planledger audit git` and the timeline's commits:
each commit's sha, committer date, trailers and the files it changes against its first
parent (projections.git_audit.Commit), and which of some shas the history holds.

The repository is untrusted. git runs with no shell, with the arguments this module
builds, and with the settings that could run a program or change what it prints switched
off. Its output is read in forms that cannot be mistaken for each other: `git log -z
--raw` (a path always follows the entry that introduces it) and `git cat-file --batch`
(each message length-prefixed, so a message can hold any byte). A message's last
`MESSAGE_TAIL` bytes are read for trailers (trailers close a message), whatever its size;
a date that is no date reads as None.
"""

import re
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from planledger.projections.git_audit import Commit

MAX_COMMITS = 100_000  # commits read in one audit; more: say so, and read the newest
MAX_FILES = 10_000  # files of one commit held against reservations
MESSAGE_TAIL = 64 * 1024  # bytes of a message's end read for trailers
CHUNK = 1 << 16
# Settings a repository's own configuration could use to run something or reshape output.
SAFE = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c",
        "log.showSignature=false", "-c", "diff.renames=false", "-c", "color.ui=false",
        "-c", "core.quotePath=false")
_REV = re.compile(r"[^\s\x00-\x1f\x7f~^:?*\[\\][^\s\x00-\x1f\x7f]{0,254}")
_HEADER = re.compile(rb"([0-9a-f]{40,64}) (-?\d{1,20})")
_TRAILER = re.compile(r"([A-Za-z0-9][A-Za-z0-9-]{0,99})[ \t]*:[ \t]?(.*)")


class GitError(Exception):
    """The repository cannot be read; says why."""


@dataclass(frozen=True)
class Walked:
    """The commits read, newest first, and whether the history holds more."""

    commits: list[Commit]
    more: bool


def _run(repo: Path, *args: str, stdin: IO[bytes] | None = None) -> bytes:
    try:
        done = subprocess.run(["git", *SAFE, "-C", str(repo), *args], capture_output=True,
                              stdin=stdin, check=False)
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH)") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed in {repo}: {said[-1] if said else 'no reason'}")
    return done.stdout


@contextmanager
def _stream(repo: Path, args: Sequence[str], stdin: IO[bytes] | None = None,
            ) -> Iterator[IO[bytes]]:
    """git's output to read as it comes. A reader that stops early stops git; one that
    read to the end learns of git's failure (GitError)."""
    try:
        process = subprocess.Popen(["git", *SAFE, "-C", str(repo), *args],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   stdin=stdin if stdin is not None else subprocess.DEVNULL)
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH)") from None
    assert process.stdout is not None and process.stderr is not None
    try:
        yield process.stdout
        finished = not process.stdout.read(1)
    finally:
        process.stdout.close()
        if process.poll() is None:
            process.kill()
        said = process.stderr.read().decode("utf-8", "replace").strip().splitlines()
        process.stderr.close()
        code = process.wait()
    if finished and code != 0:
        raise GitError(f"git {args[0]} failed in {repo}: {said[-1] if said else 'no reason'}")


def repository(repo: Path) -> Path:
    """The top of the repository `repo` is in; GitError when it is in none."""
    if not repo.is_dir():
        raise GitError(f"{repo} is not a directory")
    return Path(_run(repo, "rev-parse", "--show-toplevel").decode("utf-8", "surrogateescape")
                .strip())


def _revisions(repo: Path, since: str | None) -> list[str]:
    """What to walk: every branch, tag and remote-tracking branch, and HEAD (detached or
    not), short of `since` and what it reaches."""
    revs = ["--branches", "--tags", "--remotes"]
    if _resolves(repo, "HEAD"):
        revs.append("HEAD")
    if since is not None:
        if not _REV.fullmatch(since) or since.startswith("-"):
            raise GitError(f"{since[:80]!r} is not a revision")
        sha = _resolves(repo, since)
        if sha is None:
            raise GitError(f"{since[:80]!r} names no commit in {repo}")
        revs.append(f"^{sha}")
    return revs


def _resolves(repo: Path, rev: str) -> str | None:
    try:
        found = _run(repo, "rev-parse", "--verify", "--quiet", "--end-of-options",
                     f"{rev}^{{commit}}")
    except GitError:
        return None
    return found.decode("ascii", "replace").strip() or None


def walk(repo: Path, since: str | None = None, limit: int = MAX_COMMITS) -> Walked:
    """The commits of the history (after `since`, at most `limit`), newest first."""
    revs = _revisions(repo, since)
    dated: list[tuple[str, datetime | None, tuple[str, ...]]] = []
    args = ["log", "-z", "--raw", "--no-renames", "--no-abbrev", "--no-show-signature",
            "--no-color", "--diff-merges=first-parent", "--format=%H %ct",
            f"--max-count={limit + 1}", *revs, "--"]
    with _stream(repo, args) as out:
        dated += _log_records(out)
    more = len(dated) > limit
    dated = dated[:limit]
    messages = _trailers(repo, [sha for sha, _, _ in dated])
    return Walked([Commit(sha, stamp, messages.get(sha, ()), files)
                   for sha, stamp, files in dated], more)


def _tokens(out: IO[bytes]) -> Iterator[bytes]:
    """The NUL-separated tokens of a stream, read in chunks."""
    rest = b""
    while chunk := out.read(CHUNK):
        parts = (rest + chunk).split(b"\0")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


def _log_records(out: IO[bytes]) -> Iterator[tuple[str, datetime | None, tuple[str, ...]]]:
    sha: str | None = None
    stamp: datetime | None = None
    files: list[str] = []
    path_next = False
    for token in _tokens(out):
        if path_next:
            path_next = False
            if len(files) < MAX_FILES:
                files.append(token.decode("utf-8", "surrogateescape"))
            continue
        bare = token.lstrip(b"\n")
        if bare.startswith(b":"):
            path_next = True
            continue
        header = _HEADER.fullmatch(bare)
        if header is None:
            if not bare:
                continue
            raise GitError("git log printed what it never prints: the repository could "
                           "not be read")
        if sha is not None:
            yield sha, stamp, tuple(files)
        sha, stamp, files = header.group(1).decode(), _date(header.group(2)), []
    if sha is not None:
        yield sha, stamp, tuple(files)


def _date(seconds: bytes) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(seconds), UTC)
    except (OverflowError, ValueError, OSError):
        return None


def _trailers(repo: Path, shas: Sequence[str]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Each commit's trailers, from its message's last MESSAGE_TAIL bytes."""
    found: dict[str, tuple[tuple[str, str], ...]] = {}
    if not shas:
        return found
    with tempfile.TemporaryFile() as asked:
        asked.write("".join(f"{sha}\n" for sha in shas).encode())
        asked.seek(0)
        with _stream(repo, ["cat-file", "--batch"], stdin=asked) as out:
            for sha in shas:
                message = _object_tail(out)
                if message is None:
                    break
                found[sha] = trailers_of(message.decode("utf-8", "replace"))
    return found


def _object_tail(out: IO[bytes]) -> bytes | None:
    """The message of the next object `cat-file --batch` prints (its tail when long)."""
    header = out.readline(200)
    parts = header.split()
    if len(parts) != 3 or parts[1] != b"commit" or not parts[2].isdigit():
        return None
    size = int(parts[2])
    kept, left = b"", size
    while left:
        chunk = out.read(min(CHUNK, left))
        if not chunk:
            return None
        left -= len(chunk)
        kept = (kept + chunk)[-(MESSAGE_TAIL + CHUNK):]
    out.read(1)  # the newline after each object
    if size <= MESSAGE_TAIL + CHUNK:
        _, _, body = kept.partition(b"\n\n")
        return body
    return kept[-MESSAGE_TAIL:]


def trailers_of(message: str) -> tuple[tuple[str, str], ...]:
    """The trailers of a commit message: the `Key: value` lines of its last paragraph (a
    line that begins with white space continues the one before), when at least a quarter
    of that paragraph's lines are trailers, as git reads them."""
    paragraphs = [p for p in re.split(r"\n[ \t]*\n", message.strip("\n")) if p.strip()]
    if len(paragraphs) < 2:
        return ()  # the subject alone is never trailers
    lines = paragraphs[-1].splitlines()
    found: list[list[str]] = []
    other = 0
    for line in lines:
        if line[:1] in (" ", "\t") and found:
            found[-1][1] += " " + line.strip()
            continue
        matched = _TRAILER.fullmatch(line.rstrip())
        if matched is None:
            other += 1
            continue
        found.append([matched.group(1), matched.group(2).strip()])
    if not found or other * 3 > len(found):
        return ()
    return tuple((k, v) for k, v in found)


def _whole(repo: Path, shas: Sequence[str]) -> list[str | None]:
    """The whole sha of the commit each (abbreviated) sha names; None where none is
    stored, or the abbreviation names more than one object."""
    if not shas:
        return []
    with tempfile.TemporaryFile() as asked:
        asked.write("".join(f"{sha}^{{commit}}\n" for sha in shas).encode())
        asked.seek(0)
        listed = _run(repo, "cat-file", "--batch-check=%(objectname) %(objecttype)",
                      stdin=asked)
    answers = listed.decode("ascii", "replace").splitlines()
    wholes: list[str | None] = []
    for answer in answers[:len(shas)]:
        parts = answer.split()
        wholes.append(parts[0] if len(parts) == 2 and parts[1] == "commit" else None)
    return wholes + [None] * (len(shas) - len(wholes))


def held(repo: Path, shas: Sequence[str]) -> set[str]:
    """Which of `shas` (abbreviated or whole) name commits the history reaches from its
    branches, tags, remote-tracking branches and HEAD: a commit that was rewritten away
    (amended, reset) may still be stored, but is not held."""
    wanted: dict[str, list[str]] = {}  # a whole sha: the shas given for it
    asked = [sha for sha in dict.fromkeys(shas) if re.fullmatch(r"[0-9a-f]{7,64}", sha)]
    for sha, whole in zip(asked, _whole(repo, asked), strict=True):
        if whole is not None:
            wanted.setdefault(whole, []).append(sha)
    found: set[str] = set()
    if not wanted:
        return found
    with _stream(repo, ["rev-list", *_revisions(repo, None), "--"]) as out:
        for line in out:
            given = wanted.pop(line.strip().decode("ascii", "replace"), None)
            if given:
                found.update(given)
            if not wanted:
                break
    return found
