"""`planledger demo --audit DIR`, run as a user runs it: the example it makes is a real
repository and store that `planledger audit git` (the user's own next command) reads to
the same three findings; a folder that is not new and empty is refused, nothing written."""

import json
import os
import subprocess
import sys
from pathlib import Path

KINDS = ["evidence_missing", "into_reservation", "outside_claim"]


def _planledger(*args: str, env: dict[str, str] | None = None,
                ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "planledger", *args], capture_output=True,
                          text=True, timeout=300, check=False, env=env)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout


def test_the_audit_example_is_made_for_real_and_audits_to_three_findings(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "example"

    made = _planledger("demo", "--audit", str(folder), "--json")

    assert made.returncode == 1, made.stderr  # the audit's: it found something
    report = json.loads(made.stdout)
    assert f"$ planledger audit git --repo {folder / 'repo'}" in made.stderr
    assert sorted(f["kind"] for f in report["findings"]) == KINDS
    assert report["commits_read"] == 5
    # The findings name real commits of the repository (all but the one reset away).
    history = _git(folder / "repo", "log", "--format=%H").split()
    named = {f["kind"]: f["commit"] for f in report["findings"]}
    assert named["into_reservation"] in history and named["outside_claim"] in history
    assert named["evidence_missing"] not in history
    assert "Planledger-Step: auth#1" in _git(folder / "repo", "log", "--format=%B")

    again = _planledger("audit", "git", "--repo", str(folder / "repo"), "--db",
                        str(folder / "ledger.sqlite"), "--json")
    assert again.returncode == 1, again.stderr
    assert json.loads(again.stdout)["findings"] == report["findings"]

    people = _planledger("demo", "--audit", str(tmp_path / "second"))
    assert people.returncode == 1
    assert "3 findings: 1 made outside a live claim" in people.stdout
    assert "$ planledger audit git --repo" in people.stdout


def test_a_folder_that_is_not_new_and_empty_is_refused_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("mine\n")

    refused = _planledger("demo", "--audit", str(tmp_path))

    assert refused.returncode == 1
    assert "is not an empty folder" in refused.stderr and "Traceback" not in refused.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    mixed = _planledger("demo", "--audit", str(tmp_path / "new"), "--race")
    assert mixed.returncode == 1 and "takes no --race" in mixed.stderr
    assert not (tmp_path / "new").exists()


def test_a_folder_it_cannot_make_or_a_machine_without_git_is_refused_leaving_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "afile").write_text("mine\n")
    under_a_file = _planledger("demo", "--audit", str(tmp_path / "afile" / "sub"))
    assert under_a_file.returncode == 1
    assert "cannot make the example" in under_a_file.stderr
    assert "Traceback" not in under_a_file.stderr

    no_git = _planledger("demo", "--audit", str(tmp_path / "new"),
                         env={**os.environ, "PATH": str(Path(sys.executable).parent)})
    assert no_git.returncode == 1 and "needs git" in no_git.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
