"""The commit guard in a real git repository: `planledger guard install` writes the hooks,
and `git commit` / `git merge` run them against the embedded store or a real server.

Agent B holds a step reserving `internal/auth/**`; agent A commits. A commit touching
only unreserved paths goes through; one touching B's paths is refused naming file,
pattern, holder and step, unless B commits it or B's claim has ended; a merge is judged by
what it changes against its first parent; an unreachable ledger lets the commit through
with a warning, or refuses it when the hook fails closed.
"""

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from planledger.api.runtime import open_runtime
from planledger.bench.servers import Replica, start_replica
from planledger.ledger.application import NewStep
from planledger.ledger.domain.paths import PathSpec
from tests.support import OPERATOR

AUTH = "internal/auth/**"


@dataclass(frozen=True)
class Scene:
    repo: Path
    db: Path
    a: str  # agent A's session: holds nothing
    b: str  # agent B's: holds the step reserving internal/auth/**
    b_step: str


def _git(repo: Path, *args: str, session: str | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLANLEDGER_")}
    if session is not None:
        env["PLANLEDGER_SESSION"] = session
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env=env, check=check)


def _write(repo: Path, path: str, text: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    _git(repo, "add", "--", path)


def _planledger(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLANLEDGER_")}
    return subprocess.run([sys.executable, "-m", "planledger", *args], capture_output=True,
                          text=True, env=env, check=False)


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    repo, db = tmp_path / "repo", tmp_path / "ledger.sqlite"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "dev@example.com")
    _git(repo, "config", "user.name", "Dev")
    _write(repo, "README.md", "hello\n")
    _write(repo, "internal/auth/token.go", "package auth\n")
    _git(repo, "commit", "-q", "-m", "start")
    runtime = open_runtime(str(db))
    ledger = runtime.ledger
    a, b = ledger.start_session("agent A").id, ledger.start_session("agent B").id
    _, (step,) = ledger.create_plan("auth", "Auth", steps=[
        NewStep("Rotate refresh tokens", paths=(PathSpec(AUTH),))], actor=OPERATOR)
    ledger.claim(step, b)
    runtime.close()
    return Scene(repo, db, a, b, step)


def _install(scene: Scene, *store: str) -> None:
    done = _planledger("guard", "install", "--repo", str(scene.repo),
                       *(store or ("--db", str(scene.db))))
    assert done.returncode == 0, done.stderr
    assert (scene.repo / ".git/hooks/pre-commit").exists()


def test_a_commit_of_unreserved_paths_goes_through(scene: Scene) -> None:
    _install(scene)
    _write(scene.repo, "docs/guide.md", "how\n")
    done = _git(scene.repo, "commit", "-m", "docs", session=scene.a, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_a_commit_touching_another_sessions_paths_is_refused_naming_holder_and_step(
    scene: Scene,
) -> None:
    _install(scene)
    _write(scene.repo, "internal/auth/token.go", "package auth // changed\n")
    _write(scene.repo, "README.md", "hello again\n")

    refused = _git(scene.repo, "commit", "-m", "auth", session=scene.a, check=False)

    assert refused.returncode != 0
    assert (f'internal/auth/token.go: "{AUTH}" is held by "{scene.b}" (agent B, step '
            'auth#1 "Rotate refresh tokens")') in refused.stderr
    assert "README.md" not in refused.stderr
    assert _git(scene.repo, "log", "--oneline").stdout.count("\n") == 1  # nothing committed
    by_holder = _git(scene.repo, "commit", "-m", "auth", session=scene.b, check=False)
    assert by_holder.returncode == 0, by_holder.stderr


def test_deleting_or_renaming_a_reserved_file_is_touching_it(scene: Scene) -> None:
    _install(scene)
    _git(scene.repo, "mv", "internal/auth/token.go", "token.go")
    refused = _git(scene.repo, "commit", "-m", "move", session=scene.a, check=False)
    assert refused.returncode != 0 and "internal/auth/token.go" in refused.stderr


def test_once_the_claim_ends_the_paths_are_free(scene: Scene) -> None:
    _install(scene)
    runtime = open_runtime(str(scene.db))
    runtime.ledger.complete(scene.b_step, scene.b)
    runtime.close()
    _write(scene.repo, "internal/auth/token.go", "package auth // changed\n")
    done = _git(scene.repo, "commit", "-m", "auth", session=scene.a, check=False)
    assert done.returncode == 0, done.stderr


def _branch(scene: Scene, name: str, *changes: tuple[str, str]) -> None:
    """A branch off main committing `changes` (unguarded: made before the hooks)."""
    _git(scene.repo, "checkout", "-q", "-b", name)
    for path, text in changes:
        _write(scene.repo, path, text)
        _git(scene.repo, "commit", "-q", "-m", f"{name}: {path}")
    _git(scene.repo, "checkout", "-q", "main")


def test_a_merge_is_judged_by_what_it_changes_against_its_first_parent(scene: Scene) -> None:
    # `undone` touched the reserved file and put it back; `same` changed it as main then
    # did: neither merge changes it on main. `real` adds a file under the reserved paths.
    original = "package auth\n"
    _branch(scene, "undone", ("internal/auth/token.go", "package auth // tried\n"),
            ("internal/auth/token.go", original), ("notes.md", "tried\n"))
    _branch(scene, "same", ("internal/auth/token.go", "package auth // v2\n"))
    _branch(scene, "real", ("internal/auth/refresh.go", "package auth\n"))
    _write(scene.repo, "internal/auth/token.go", "package auth // v2\n")
    _git(scene.repo, "commit", "-q", "-m", "v2 on main")  # before the hooks
    _install(scene)

    for branch in ("undone", "same"):
        merged = _git(scene.repo, "merge", "--no-ff", "-m", f"merge {branch}", branch,
                      session=scene.a, check=False)
        assert merged.returncode == 0, (branch, merged.stdout, merged.stderr)
    refused = _git(scene.repo, "merge", "--no-ff", "-m", "merge real", "real",
                   session=scene.a, check=False)
    assert refused.returncode != 0
    assert f'internal/auth/refresh.go: "{AUTH}" is held by "{scene.b}"' in refused.stderr
    assert "token.go" not in refused.stderr
    _git(scene.repo, "merge", "--abort")


def test_a_conflicted_merge_is_judged_when_it_is_committed(scene: Scene) -> None:
    _branch(scene, "other", ("internal/auth/token.go", "package auth // theirs\n"))
    _write(scene.repo, "internal/auth/token.go", "package auth // ours\n")
    _git(scene.repo, "commit", "-q", "-m", "ours")
    _install(scene)
    _git(scene.repo, "merge", "other", check=False)  # conflicts: waits for a hand
    _write(scene.repo, "internal/auth/token.go", "package auth // both\n")
    refused = _git(scene.repo, "commit", "--no-edit", session=scene.a, check=False)
    assert refused.returncode != 0 and "internal/auth/token.go" in refused.stderr


def test_an_unreachable_ledger_lets_the_commit_through_unless_the_hook_fails_closed(
    scene: Scene, tmp_path: Path,
) -> None:
    missing = str(tmp_path / "nowhere.sqlite")
    _install(scene, "--db", missing)
    _write(scene.repo, "internal/auth/token.go", "package auth // changed\n")
    allowed = _git(scene.repo, "commit", "-m", "auth", session=scene.a, check=False)
    assert allowed.returncode == 0, allowed.stderr
    assert "cannot check this commit" in allowed.stderr and "allowed" in allowed.stderr
    assert not Path(missing).exists()  # the guard never creates a store

    _install(scene, "--url", "http://127.0.0.1:9", "--fail-closed")
    _write(scene.repo, "README.md", "changed\n")
    refused = _git(scene.repo, "commit", "-m", "readme", session=scene.a, check=False)
    assert refused.returncode != 0 and "refused (the hook fails closed)" in refused.stderr


def test_a_hook_that_is_not_the_guards_is_chained_run_first_and_its_refusal_stands(
    scene: Scene,
) -> None:
    """As MCP Agent Mail's installer does: the repository's own hook keeps running."""
    hook = scene.repo / ".git/hooks/pre-commit"
    ran = scene.repo.parent / "own-hook-ran"
    hook.write_text(f'#!/bin/sh\necho ran >> "{ran}"\n[ ! -e "{ran}.refuse" ]\n')
    hook.chmod(0o755)
    _install(scene)
    _install(scene)  # again: the chained hook is kept, not chained to itself

    assert "planledger commit guard" in hook.read_text()
    _write(scene.repo, "docs/guide.md", "how\n")
    done = _git(scene.repo, "commit", "-m", "docs", session=scene.a, check=False)
    assert done.returncode == 0, done.stderr
    assert ran.read_text() == "ran\n"

    Path(f"{ran}.refuse").touch()
    _write(scene.repo, "docs/guide.md", "how, again\n")
    refused = _git(scene.repo, "commit", "-m", "docs 2", session=scene.a, check=False)
    assert refused.returncode != 0 and ran.read_text() == "ran\nran\n"

    _write(scene.repo, "internal/auth/token.go", "package auth // changed\n")
    Path(f"{ran}.refuse").unlink()
    guarded = _git(scene.repo, "commit", "-m", "auth", session=scene.a, check=False)
    assert guarded.returncode != 0 and f'is held by "{scene.b}"' in guarded.stderr


def test_a_chained_hook_that_is_not_executable_is_skipped_as_git_skips_it(
    scene: Scene,
) -> None:
    """git ignores a hook without its executable bit (a hook switched off, or a sample
    renamed): chained, it must stay ignored, not refuse every commit with `Permission
    denied`."""
    hook = scene.repo / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o644)
    _install(scene)

    _write(scene.repo, "docs/guide.md", "how\n")
    done = _git(scene.repo, "commit", "-m", "docs", session=scene.a, check=False)
    assert done.returncode == 0, done.stderr
    assert (scene.repo / ".git/hooks/pre-commit.pre-planledger").exists()


def test_a_hook_that_is_a_symlink_is_never_written_through(scene: Scene) -> None:
    """A hook may be a symlink (hook managers link tracked files): installing moves the
    link aside and never writes the guard's hook into the file it names, nor fails with a
    traceback when it names nothing."""
    hooks = scene.repo / ".git/hooks"
    shared = scene.repo.parent / "shared-hooks"
    shared.mkdir()
    (hooks / "pre-commit").symlink_to(shared / "pre-commit")  # dangling: nothing there yet
    (shared / "own").write_text("#!/bin/sh\nexit 0\n")
    (shared / "own").chmod(0o755)
    (hooks / "pre-merge-commit").symlink_to(shared / "own")
    _install(scene)

    assert not (shared / "pre-commit").exists()
    assert (shared / "own").read_text() == "#!/bin/sh\nexit 0\n"
    for name in ("pre-commit", "pre-merge-commit"):
        assert not (hooks / name).is_symlink()
        assert "planledger commit guard" in (hooks / name).read_text()
        assert (hooks / f"{name}.pre-planledger").is_symlink()
    _write(scene.repo, "docs/guide.md", "how\n")
    done = _git(scene.repo, "commit", "-m", "docs", session=scene.a, check=False)
    assert done.returncode == 0, done.stderr


def test_force_replaces_a_hook_that_is_not_the_guards(scene: Scene) -> None:
    hook = scene.repo / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\nexit 1\n")
    forced = _planledger("guard", "install", "--repo", str(scene.repo), "--db",
                         str(scene.db), "--force")
    assert forced.returncode == 0 and "planledger commit guard" in hook.read_text()
    assert "exit 1" not in hook.read_text()
    assert not (scene.repo / ".git/hooks/pre-commit.pre-planledger").exists()


@pytest.fixture
def server(scene: Scene) -> Iterator[Replica]:
    replica = start_replica(str(scene.db))
    yield replica
    replica.stop()


def test_the_guard_asks_a_running_server(scene: Scene, server: Replica) -> None:
    _install(scene, "--url", server.url)
    _write(scene.repo, "internal/auth/token.go", "package auth // changed\n")
    refused = _git(scene.repo, "commit", "-m", "auth", session=scene.a, check=False)
    assert refused.returncode != 0
    assert f'"{AUTH}" is held by "{scene.b}" (agent B' in refused.stderr
    _git(scene.repo, "reset", "-q", "HEAD", "--", "internal/auth/token.go")
    _write(scene.repo, "docs/x.md", "x\n")
    assert _git(scene.repo, "commit", "-m", "docs", session=scene.a, check=False).returncode == 0


def test_a_file_name_that_is_no_utf8_does_not_open_the_guard(
        scene: Scene, server: Replica) -> None:
    _install(scene, "--url", server.url)
    odd = os.fsdecode(b"notes-\xff.txt")  # a name git keeps as bytes, no UTF-8 text
    (scene.repo / odd).write_text("x\n")
    _git(scene.repo, "add", "--", odd)
    _write(scene.repo, "internal/auth/token.go", "package auth // changed\n")
    refused = _git(scene.repo, "commit", "-m", "both", session=scene.a, check=False)
    assert refused.returncode != 0, refused.stderr
    assert f'internal/auth/token.go: "{AUTH}" is held by "{scene.b}"' in refused.stderr
    _git(scene.repo, "reset", "-q", "HEAD", "--", "internal/auth/token.go")
    alone = _git(scene.repo, "commit", "-m", "odd name", session=scene.a, check=False)
    assert alone.returncode == 0 and alone.stderr == "", alone.stderr


def test_a_ledger_that_refuses_the_guards_question_refuses_the_commit(
        scene: Scene, server: Replica) -> None:
    hook_env = {"PLANLEDGER_TOKEN": "01ARZ3NDEKTSV4RRFFQ69G5FAV." + "A" * 43}  # signed by nobody
    _install(scene, "--url", server.url)
    _write(scene.repo, "docs/x.md", "x\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLANLEDGER_")}
    refused = subprocess.run(["git", "-C", str(scene.repo), "commit", "-m", "docs"],
                             capture_output=True, text=True, env={**env, **hook_env},
                             check=False)
    assert refused.returncode != 0, refused.stderr
    assert "the ledger refused to check this commit" in refused.stderr
    assert "allowed without a check" not in refused.stderr

