"""A real git repository beside a real SQLite store for the commit guard's trailers and
`planledger audit git`: two sessions, a plan of three steps reserving paths, and git run
with none of the user's configuration (GIT_CONFIG_GLOBAL, GIT_CONFIG_NOSYSTEM).

The ledger runs on a fake clock set a month ahead of this machine's: the hooks' own
process reads the store, whose clock never runs before its newest event, so the hooks see
the ledger's time, not the machine's, whatever the machine's speed. Each commit is dated
by hand (GIT_COMMITTER_DATE) on the same clock.
"""

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain.paths import PathSpec
from planledger.replays.git_audit_demo import commit, run_git
from tests.support import OPERATOR
from tests.support.fakes import FakeClock

LONG = 86_400  # seconds: a lease that holds through a test



@dataclass
class Scene:
    repo: Path
    db: Path
    clock: FakeClock
    runtime: Runtime
    a: str
    b: str
    steps: tuple[str, ...]  # auth#1 src/auth/**, auth#2 docs/**, auth#3 src/metrics/**

    @property
    def start(self) -> datetime:
        return self.clock.start

    def at(self, seconds: float) -> datetime:
        moment = self.start + timedelta(seconds=seconds)
        self.clock.set(moment)
        return moment

    def git(self, *args: str, session: str | None = None, when: datetime | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_git(self.repo, *args, session=session, when=when, check=check)

    def commit(self, path: str, message: str, session: str | None, when: datetime,
               *flags: str, hooks: bool = True) -> str:
        """Commit `path` (`flags`: `git commit`'s; `hooks` False: as a clone without the
        guard's hooks would)."""
        return commit(self.repo, path, message, session, when, *flags, hooks=hooks)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD").stdout.strip()

    def message(self, rev: str = "HEAD") -> str:
        return self.git("log", "-1", "--format=%B", rev).stdout

    def install(self, *store: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PLANLEDGER_")}
        return subprocess.run([sys.executable, "-m", "planledger", "guard", "install",
                               "--repo", str(self.repo), *(store or ("--db", str(self.db)))],
                              capture_output=True, text=True, env=env, check=True)


class StartedClock(FakeClock):
    def __init__(self, start: datetime) -> None:
        super().__init__(start)
        self.start = start


def _made(tmp_path: Path, start: datetime) -> Scene:
    clock = StartedClock(start)
    repo, db = tmp_path / "repo", tmp_path / "ledger.sqlite"
    repo.mkdir()
    runtime = open_runtime(str(db), clock=clock)
    ledger = runtime.ledger
    a, b = ledger.start_session("agent A").id, ledger.start_session("agent B").id
    _, steps = ledger.create_plan("auth", "Auth", steps=[
        NewStep("Rotate tokens", paths=(PathSpec("src/auth/**"),)),
        NewStep("Write the guide", paths=(PathSpec("docs/**"),)),
        NewStep("Emit metrics", paths=(PathSpec("src/metrics/**"),))], actor=OPERATOR)
    made = Scene(repo, db, clock, runtime, a, b, tuple(steps))
    made.git("init", "-q", "-b", "main")
    made.commit("README.md", "start", None, made.at(0))  # before any hook
    made.install()
    return made


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    """The scene on a clock a month ahead: the hooks see the ledger's time."""
    made = _made(tmp_path, datetime.now(UTC).replace(microsecond=0) + timedelta(days=30))
    yield made
    made.runtime.close()


@pytest.fixture
def past_scene(tmp_path: Path) -> Iterator[Scene]:
    """The scene on a clock ten minutes behind this machine's, for what refuses a log
    from the future (a recording's import): its hooks see this machine's time, within
    every LONG lease granted in the scene's first ten minutes."""
    made = _made(tmp_path, datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10))
    yield made
    made.runtime.close()
