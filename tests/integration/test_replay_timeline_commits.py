"""`planledger replay timeline RECORDING --repo DIR`: each session's commits, found by
their Planledger-Session trailer in a real repository (tests.support.git_scene), sit in
that session's lane between the claim they were made under and its completion."""

import json
import subprocess
import sys
from pathlib import Path

from planledger.main import run
from tests.support.cli_runner import CliRunner
from tests.support.git_scene import LONG, Scene, past_scene

__all__ = ["past_scene"]  # the fixture
runner = CliRunner()


def test_a_sessions_commits_show_in_its_lane_between_its_claim_and_completion(
    past_scene: Scene, tmp_path: Path,
) -> None:
    scene = past_scene
    ledger = scene.runtime.ledger
    s1, s2, _ = scene.steps
    scene.at(1)
    ledger.claim(s1, scene.a, lease_seconds=LONG)
    ledger.claim(s2, scene.b, lease_seconds=LONG)
    mine = scene.commit("src/auth/a.py", "rotate", scene.a, scene.at(10))
    theirs = scene.commit("docs/guide.md", "guide", scene.b, scene.at(15))
    scene.commit("notes.txt", "by a person", None, scene.at(16))
    scene.at(20)
    ledger.complete(s1, scene.a)
    recording = tmp_path / "run.jsonl"
    exported = subprocess.run([sys.executable, "-m", "planledger", "replay", "export",
                               str(recording), "--db", str(scene.db)], capture_output=True,
                              text=True, check=False)
    assert exported.returncode == 0, exported.stderr

    ran = runner.invoke(run, ["replay", "timeline", str(recording), "--repo",
                              str(scene.repo), "--json"])

    assert ran.exit_code == 0, ran.output
    entries = json.loads(ran.stdout)["entries"]
    commits = [e for e in entries if e["kind"] == "commit"]
    assert [(e["session_id"], e["text"]) for e in commits] == [
        (scene.a, f"commit {mine[:7]} under auth#1 (fence 1)"),
        (scene.b, f"commit {theirs[:7]} under auth#2 (fence 1)")]
    kinds = [(e["kind"], e["session_id"]) for e in entries]
    claimed = kinds.index(("claimed", scene.a))
    done = kinds.index(("completed", scene.a))
    assert claimed < kinds.index(("commit", scene.a)) < done
    assert commits[0]["step_number"] == 1 and commits[0]["step_title"] == "Rotate tokens"

    people = runner.invoke(run, ["replay", "timeline", str(recording), "--repo",
                                 str(scene.repo)])
    assert people.exit_code == 0 and f"commit {mine[:7]} under auth#1" in people.stdout
    without = runner.invoke(run, ["replay", "timeline", str(recording), "--json"])
    assert "commit" not in {e["kind"] for e in json.loads(without.stdout)["entries"]}
