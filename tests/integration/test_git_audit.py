"""`planledger audit git` on a real git repository and a real SQLite store: two sessions
with claims that reserve paths, commits made with the guard's hooks and without them,
one `--no-verify` commit into the other session's reserved files, one commit amended
after its lease lapsed, one made up, and a completion naming a commit that was reset
away. The audit names exactly those, and nothing on a clean history.

The ledger runs on a fake clock set a month ahead of this machine's: the hooks' own
process reads the store, whose clock never runs before its newest event, so the hooks
see the ledger's time, not the machine's, whatever the machine's speed. Each commit is
dated by hand (GIT_COMMITTER_DATE) on the same clock.
"""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger import commands as c
from planledger.ledger.application import NewStep
from planledger.ledger.domain.evidence import Evidence
from planledger.ledger.domain.paths import PathSpec
from planledger.main import run
from tests.support import OPERATOR
from tests.support.cli_runner import CliRunner
from tests.support.fakes import FakeClock

LONG = 3600  # seconds: a lease that holds through a test
runner = CliRunner()


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
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PLANLEDGER_", "GIT_"))}
        env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1",
                   GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="dev@example.com",
                   GIT_COMMITTER_NAME="Dev", GIT_COMMITTER_EMAIL="dev@example.com")
        if session is not None:
            env["PLANLEDGER_SESSION"] = session
        if when is not None:
            env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"] = \
                f"@{int(when.timestamp())} +0000"
        return subprocess.run(["git", "-C", str(self.repo), *args], capture_output=True,
                              text=True, env=env, check=check)

    def commit(self, path: str, message: str, session: str | None, when: datetime,
               *flags: str, hooks: bool = True) -> str:
        """Commit `path` (`flags`: `git commit`'s; `hooks` False: as a clone without the
        guard's hooks would)."""
        (self.repo / path).parent.mkdir(parents=True, exist_ok=True)
        (self.repo / path).write_text(f"{message}\n")
        self.git("add", "--", path)
        unhooked = () if hooks else ("-c", "core.hooksPath=/dev/null")
        done = self.git(*unhooked, "commit", "-q", *flags, "-m", message, session=session,
                        when=when, check=False)
        assert done.returncode == 0, done.stderr
        return self.head()

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


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=30)
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
    yield made
    runtime.close()


def _complete(scene: Scene, step: str, session: str, *commits: str) -> None:
    scene.runtime.ledger.execute(c.Complete(step, session,
                                            evidence=Evidence(commits=commits)))


def _audit(scene: Scene, *more: str) -> tuple[int, dict[str, object]]:
    ran = runner.invoke(run, ["audit", "git", "--repo", str(scene.repo), "--db",
                              str(scene.db), "--json", *more])
    assert ran.exception is None, ran.exception
    return ran.exit_code, json.loads(ran.stdout)


def _found(report: dict[str, object]) -> list[tuple[str, str, str | None, str | None]]:
    findings = report["findings"]
    assert isinstance(findings, list)
    return sorted((f["kind"], f["commit"], f["step"], f["session"]) for f in findings)


def test_a_history_made_under_live_claims_has_no_findings(scene: Scene) -> None:
    ledger = scene.runtime.ledger
    s1, s2, _ = scene.steps
    ledger.claim(s1, scene.a, lease_seconds=LONG)
    ledger.claim(s2, scene.b, lease_seconds=LONG)
    c1 = scene.commit("src/auth/rotate.py", "rotate", scene.a, scene.at(10))
    c2 = scene.commit("docs/guide.md", "guide", scene.b, scene.at(20))
    scene.at(30)
    _complete(scene, s1, scene.a, c1[:7])
    _complete(scene, s2, scene.b, c2)

    assert f"Planledger-Step: auth#1 {s1}\nPlanledger-Fence: 1\n" \
           f"Planledger-Session: {scene.a}" in scene.message(c1)
    code, report = _audit(scene)
    assert (code, report["findings"], report["commits_read"]) == (0, [], 3)

    people = runner.invoke(run, ["audit", "git", "--repo", str(scene.repo), "--db",
                                 str(scene.db)])
    assert people.exit_code == 0
    assert "read 3 commits" in people.stdout and "no findings" in people.stdout
    assert "committer dates are the committer's word" in people.stdout


def test_the_audit_names_each_commit_that_escaped_its_claim_and_nothing_else(
    scene: Scene,
) -> None:
    ledger = scene.runtime.ledger
    s1, s2, s3 = scene.steps
    scene.at(1)
    ledger.claim(s1, scene.a, lease_seconds=LONG)
    ledger.claim(s2, scene.b, lease_seconds=LONG)
    ledger.claim(s3, scene.a, lease_seconds=60)  # lapses at +61
    c1 = scene.commit("src/auth/rotate.py", "rotate", scene.a, scene.at(10))
    # The guard would refuse this one (docs/** is B's): --no-verify passes it by.
    bypassed = scene.commit("docs/guide.md", "fix the guide", scene.a, scene.at(20),
                            "--no-verify")
    c3 = scene.commit("docs/other.md", "other", scene.b, scene.at(30))
    made_up = scene.commit("README.md", f"readme\n\nPlanledger-Step: auth#3 {s3}\n"
                           f"Planledger-Fence: 7\nPlanledger-Session: {scene.a}",
                           None, scene.at(40), hooks=False)
    scene.commit("src/metrics/m.py", "metrics", scene.a, scene.at(50))
    scene.at(200)
    ledger.heartbeat(s2, scene.b, lease_seconds=LONG)  # the ledger's clock moves on
    amended = scene.git("commit", "-q", "--amend", "--no-edit", session=scene.a,
                        when=scene.start + timedelta(seconds=200))
    assert amended.returncode == 0
    lapsed = scene.head()
    scene.at(210)
    _complete(scene, s1, scene.a, c1)
    gone = scene.commit("docs/api.md", "api", scene.b, scene.at(220))
    scene.at(230)
    _complete(scene, s2, scene.b, c3, gone)
    scene.git("reset", "-q", "--hard", "HEAD~1")  # the completion's commit, rewritten away

    code, report = _audit(scene)

    assert code == 1
    assert report["commits_read"] == 6
    assert _found(report) == sorted([
        ("into_reservation", bypassed, "auth#2", scene.a),
        ("unknown_claim", made_up, "auth#3", scene.a),
        ("outside_claim", lapsed, "auth#3", scene.a),
        ("evidence_missing", gone, "auth#2", scene.b),
    ])
    texts = {f["kind"]: f["text"] for f in report["findings"]}  # type: ignore[union-attr]
    assert "lease lapsed" in texts["outside_claim"]
    assert "docs/guide.md" in texts["into_reservation"] and scene.b in texts[
        "into_reservation"]
    assert "never granted" in texts["unknown_claim"]


def test_no_verify_passes_the_guard_by_but_not_the_trailers(scene: Scene) -> None:
    """--no-verify skips pre-commit and commit-msg, never prepare-commit-msg: the commit
    that escaped the guard still says whose it was."""
    s1, s2, _ = scene.steps
    scene.runtime.ledger.claim(s1, scene.a, lease_seconds=LONG)
    scene.runtime.ledger.claim(s2, scene.b, lease_seconds=LONG)
    (scene.repo / "docs").mkdir()
    (scene.repo / "docs/guide.md").write_text("mine\n")
    scene.git("add", "docs/guide.md")
    refused = scene.git("commit", "-q", "-m", "guide", session=scene.a, when=scene.at(5),
                        check=False)
    assert refused.returncode != 0 and "is held by" in refused.stderr

    bypassed = scene.commit("docs/guide.md", "guide", scene.a, scene.at(6), "--no-verify")

    assert f"Planledger-Session: {scene.a}" in scene.message()
    code, report = _audit(scene)
    assert code == 1 and _found(report) == [("into_reservation", bypassed, "auth#2",
                                              scene.a)]
