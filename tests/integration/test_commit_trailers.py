"""The commit guard's trailer hooks in a real git repository (tests.support.git_scene): a
commit made by a session holding live claims carries one Planledger-Step and -Fence pair
per claim and the session once; an amend adds none twice; an editor's message gets them
once written; a foreign hook is chained and run first; and the hooks never block a
commit, even with the ledger out of reach.
"""

import os
import subprocess
import sys

from tests.support.git_scene import LONG, Scene, scene

__all__ = ["scene"]  # the fixture


def _trailers(scene: Scene) -> list[str]:
    parsed = subprocess.run(["git", "-C", str(scene.repo), "interpret-trailers", "--parse"],
                            input=scene.message(), capture_output=True, text=True,
                            check=True)
    return parsed.stdout.splitlines()


def test_a_session_holding_two_claims_gets_a_pair_for_each_and_an_amend_adds_none_twice(
    scene: Scene,
) -> None:
    s1, _, s3 = scene.steps
    scene.runtime.ledger.claim(s1, scene.a, lease_seconds=LONG)
    scene.runtime.ledger.claim(s3, scene.a, lease_seconds=LONG)
    scene.commit("src/auth/a.py", "work", scene.a, scene.at(5))
    expected = [f"Planledger-Step: auth#1 {s1}", "Planledger-Fence: 1",
                f"Planledger-Step: auth#3 {s3}", "Planledger-Fence: 1",
                f"Planledger-Session: {scene.a}"]
    assert _trailers(scene) == expected

    scene.git("commit", "-q", "--amend", "--no-edit", session=scene.a, when=scene.at(6))
    assert _trailers(scene) == expected
    scene.git("commit", "-q", "--amend", "-m", f"again\n\n{scene.message()}",
              session=scene.a, when=scene.at(7))
    assert _trailers(scene) == expected


def test_a_commit_by_no_session_or_by_one_holding_nothing_gets_no_trailers(
    scene: Scene,
) -> None:
    scene.commit("a.txt", "by a person", None, scene.at(5))
    assert _trailers(scene) == []
    scene.commit("b.txt", "by B, holding nothing", scene.b, scene.at(6))
    assert _trailers(scene) == []


def test_a_message_written_in_the_editor_gets_the_trailers_once_written(
    scene: Scene,
) -> None:
    s1, _, _ = scene.steps
    scene.runtime.ledger.claim(s1, scene.a, lease_seconds=LONG)
    (scene.repo / "x.txt").write_text("x\n")
    scene.git("add", "x.txt")
    env = {**os.environ, "GIT_EDITOR": "printf 'written in the editor\\n' >"}
    done = subprocess.run(["git", "-C", str(scene.repo), "commit", "-q"], env={
        **{k: v for k, v in env.items() if not k.startswith("PLANLEDGER_")},
        "PLANLEDGER_SESSION": scene.a, "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "Dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "Dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com"}, capture_output=True, text=True,
        check=False)
    assert done.returncode == 0, done.stderr
    assert scene.message().startswith("written in the editor\n\n")
    assert _trailers(scene) == [f"Planledger-Step: auth#1 {s1}", "Planledger-Fence: 1",
                                f"Planledger-Session: {scene.a}"]


def test_the_trailer_hooks_never_block_a_commit_when_the_ledger_is_out_of_reach(
    scene: Scene,
) -> None:
    s1, _, _ = scene.steps
    scene.runtime.ledger.claim(s1, scene.a, lease_seconds=LONG)
    missing = scene.repo.parent / "nowhere.sqlite"
    scene.install("--db", str(missing))
    (scene.repo / "a.txt").write_text("a\n")
    scene.git("add", "a.txt")
    done = scene.git("commit", "-q", "-m", "offline", session=scene.a, when=scene.at(5),
                     check=False)
    assert done.returncode == 0, done.stderr
    assert "no Planledger trailers added" in done.stderr and "the commit goes on" in \
        done.stderr
    assert _trailers(scene) == [] and not missing.exists()

    scene.install("--url", "http://127.0.0.1:9")
    (scene.repo / "b.txt").write_text("b\n")
    scene.git("add", "b.txt")
    done = scene.git("commit", "-q", "-m", "no server", session=scene.a,
                     when=scene.at(6), check=False)
    assert done.returncode == 0, done.stderr
    assert "no Planledger trailers added" in done.stderr


def test_the_trailers_command_itself_never_fails_a_commit(scene: Scene) -> None:
    """Whatever it is handed (no message file, a store that is not one), it exits 0."""
    not_a_store = scene.repo.parent / "junk.sqlite"
    not_a_store.write_text("not a database")
    for args in (["--db", str(scene.db), "--", str(scene.repo / "no-such-file")],
                 ["--db", str(not_a_store), "--", str(scene.repo / "README.md")]):
        done = subprocess.run([sys.executable, "-m", "planledger", "guard", "trailers",
                               "--repo", str(scene.repo), "--session", scene.a, *args],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert "no Planledger trailers added" in done.stderr
        assert "Traceback" not in done.stderr


def test_a_foreign_prepare_commit_msg_hook_is_chained_run_first_and_its_refusal_stands(
    scene: Scene,
) -> None:
    hooks = scene.repo / ".git/hooks"
    refuse = scene.repo.parent / "refuse"
    own = hooks / "prepare-commit-msg"
    own.write_text('#!/bin/sh\n[ ! -e "' + str(refuse) + '" ] || exit 1\n'
                   'printf "\\nForeign-Hook: ran\\n" >> "$1"\n')
    own.chmod(0o755)
    scene.install()
    scene.install()  # again: chained once, not to itself
    assert (hooks / "prepare-commit-msg.pre-planledger").exists()
    s1, _, _ = scene.steps
    scene.runtime.ledger.claim(s1, scene.a, lease_seconds=LONG)

    scene.commit("a.txt", "chained", scene.a, scene.at(5))
    assert _trailers(scene) == ["Foreign-Hook: ran", f"Planledger-Step: auth#1 {s1}",
                                "Planledger-Fence: 1", f"Planledger-Session: {scene.a}"]

    refuse.touch()
    (scene.repo / "b.txt").write_text("b\n")
    scene.git("add", "b.txt")
    refused = scene.git("commit", "-q", "-m", "refused by its own hook", session=scene.a,
                        when=scene.at(6), check=False)
    assert refused.returncode != 0
