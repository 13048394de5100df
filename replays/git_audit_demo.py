"""`planledger demo --audit DIR`: the auditor's example, made for real in DIR.

DIR gets a git repository (`repo/`) with the commit guard's hooks and an SQLite store
(`ledger.sqlite`). Agents A and B claim steps of plan `auth` that reserve paths, and commit:
A's work under its claim (trailers added by the hooks), one `--no-verify` commit into the
docs B holds reserved, a metrics commit amended after A's short lease on that step lapsed;
B completes naming a commit it then resets away. `planledger audit git` on DIR names exactly those
three, and the commits made under live claims pass.

The story runs on a clock of its own, started at this machine's time and moved by the
script, never slept through: its last event is a few minutes ahead of the machine's. The
hooks' processes read the store, whose clock never runs before its newest event, so they
judge each commit at the story's time (the ledger's clock is moved by an event before each
commit that must see it). Commits are dated by hand (GIT_COMMITTER_DATE) on the same clock.
"""

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from planledger.api.guard import install
from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger import commands as c
from planledger.ledger.application import NewStep
from planledger.ledger.domain.evidence import Evidence
from planledger.ledger.domain.paths import PathSpec
from planledger.ledger.ports import Clock

PLAN = "auth"
STORE = "ledger.sqlite"
REPO = "repo"
LONG = 3600  # seconds: a lease that holds through the story
SHORT = 60  # A's lease on the metrics step, which lapses before A commits to it
OPERATOR = "local:demo"


class StoryClock(Clock):
    """Stands still until the story moves it (`at`: seconds since the start)."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def at(self, seconds: float) -> datetime:
        with self._lock:
            self._now = self.start + timedelta(seconds=seconds)
            return self._now


def run_git(repo: Path, *args: str, session: str | None = None, when: datetime | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    """git in `repo`, with none of the user's configuration or planledger settings: as
    `session` (PLANLEDGER_SESSION, read by the hooks), dated `when`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLANLEDGER_", "GIT_"))}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="dev@example.com",
               GIT_COMMITTER_NAME="Dev", GIT_COMMITTER_EMAIL="dev@example.com")
    if session is not None:
        env["PLANLEDGER_SESSION"] = session
    if when is not None:
        env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"] = f"@{int(when.timestamp())} +0000"
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env=env, check=check)


def commit(repo: Path, path: str, message: str, session: str | None, when: datetime,
           *flags: str, hooks: bool = True) -> str:
    """Write and commit `path` (`flags`: `git commit`'s; `hooks` False: as a clone without
    the guard's hooks would); the new commit's sha."""
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(f"{message}\n")
    run_git(repo, "add", "--", path)
    unhooked = () if hooks else ("-c", "core.hooksPath=/dev/null")
    done = run_git(repo, *unhooked, "commit", "-q", *flags, "-m", message, session=session,
                   when=when, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git commit failed: {done.stderr.strip()}")
    return run_git(repo, "rev-parse", "HEAD").stdout.strip()


@dataclass(frozen=True)
class Story:
    repo: Path
    db: Path
    agent_a: str
    agent_b: str
    expected: tuple[tuple[str, str], ...]  # (finding kind, commit) the audit must name


def write_story(folder: Path) -> Story:
    """Make the example in `folder` (new or empty). Refused (ValueError, saying why) when
    it is not, when git is missing, or when the folder cannot be written; what a failed
    attempt made is removed, so the folder is as it was."""
    if shutil.which("git") is None:
        raise ValueError("the example needs git on PATH, and there is none")
    try:
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise ValueError(f"{folder} exists and is not an empty folder")
        existed = folder.exists()
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"cannot make the example in {folder}: {error.strerror}") from None
    try:
        return _made_in(folder)
    except (OSError, RuntimeError, subprocess.CalledProcessError) as error:
        _clear(folder, keep=existed)
        raise ValueError(f"cannot make the example in {folder}: {error}") from None


def _made_in(folder: Path) -> Story:
    repo, db = folder / REPO, folder / STORE
    repo.mkdir()
    clock = StoryClock(datetime.now(UTC).replace(microsecond=0))
    runtime = open_runtime(str(db), clock=clock)
    try:
        return _play(runtime, clock, repo, db)
    finally:
        runtime.close()


def _clear(folder: Path, keep: bool) -> None:
    """Remove what a failed attempt made: the folder itself, unless it was there before."""
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for made in folder.iterdir():
        if made.is_dir() and not made.is_symlink():
            shutil.rmtree(made, ignore_errors=True)
        else:
            made.unlink(missing_ok=True)


def _play(runtime: Runtime, clock: StoryClock, repo: Path, db: Path) -> Story:
    ledger = runtime.ledger
    a, b = ledger.start_session("agent A").id, ledger.start_session("agent B").id
    _, (rotate, guide, metrics) = ledger.create_plan(PLAN, "Auth", steps=[
        NewStep("Rotate refresh tokens", paths=(PathSpec("src/auth/**"),)),
        NewStep("Write the guide", paths=(PathSpec("docs/**"),)),
        NewStep("Emit metrics", paths=(PathSpec("src/metrics/**"),))], actor=OPERATOR)
    run_git(repo, "init", "-q", "-b", "main")
    commit(repo, "README.md", "start", None, clock.at(0))  # before the hooks
    install(repo, ["--db", str(db.resolve())])
    ledger.claim(rotate, a, lease_seconds=LONG)
    ledger.claim(guide, b, lease_seconds=LONG)
    ledger.claim(metrics, a, lease_seconds=SHORT)
    done_by_a = commit(repo, "src/auth/rotate.py", "rotate the refresh tokens", a,
                       clock.at(10))
    # The guard refuses this one (docs/** is B's): --no-verify passes it by.
    bypassed = commit(repo, "docs/guide.md", "fix a typo in the guide", a, clock.at(20),
                      "--no-verify")
    by_b = commit(repo, "docs/guide-2.md", "the guide, part 2", b, clock.at(30))
    commit(repo, "src/metrics/counter.py", "count the revocations", a, clock.at(50))
    clock.at(200)
    ledger.heartbeat(guide, b, lease_seconds=LONG)  # the ledger's clock moves on
    # A amends its metrics commit (trailers and all) after that lease lapsed (at +60).
    run_git(repo, "commit", "-q", "--amend", "--no-edit", session=a, when=clock.at(200))
    lapsed = run_git(repo, "rev-parse", "HEAD").stdout.strip()
    clock.at(210)
    ledger.execute(c.Complete(rotate, a, evidence=Evidence(commits=(done_by_a,))))
    gone = commit(repo, "docs/api.md", "the API page", b, clock.at(220))
    clock.at(230)
    ledger.execute(c.Complete(guide, b, evidence=Evidence(commits=(by_b, gone))))
    run_git(repo, "reset", "-q", "--hard", "HEAD~1")  # the completion's commit, gone
    ledger.end_session(a)
    ledger.end_session(b)
    return Story(repo, db, a, b, (("into_reservation", bypassed), ("outside_claim", lapsed),
                                  ("evidence_missing", gone)))
