"""`planledger audit git` on a real git repository and a real SQLite store
(tests.support.git_scene): two sessions with claims that reserve paths, commits made with
the guard's hooks and without them, one `--no-verify` commit into the other session's
reserved files, one commit amended after its lease lapsed, one made up, and a completion
naming a commit that was reset away. The audit names exactly those, and nothing on a
clean history.
"""

import json

from planledger.ledger import commands as c
from planledger.ledger.domain.evidence import Evidence
from planledger.main import run
from tests.support.cli_runner import CliRunner
from tests.support.git_scene import LONG, Scene, scene

__all__ = ["scene"]  # the fixture
runner = CliRunner()


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
                        when=scene.at(200))
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
