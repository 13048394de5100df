"""`planledger audit git` on a real git repository and a real SQLite store
(tests.support.git_scene): two sessions with claims that reserve paths, commits made with
the guard's hooks and without them, one `--no-verify` commit into the other session's
reserved files, one commit amended after its lease lapsed, one made up, and a completion
naming a commit that was reset away. The audit names exactly those, and nothing on a
clean history.
"""

import json
import subprocess
from datetime import timedelta
from pathlib import Path

from planledger.ledger import commands as c
from planledger.ledger.domain.evidence import Evidence
from planledger.main import run
from tests.support.cli_runner import CliRunner
from tests.support.git_scene import LONG, Scene, scene
from tests.support.live_server import live_server

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

    with live_server(scene.runtime) as server:  # the same ledger, read over HTTP
        ran = runner.invoke(run, ["audit", "git", "--repo", str(scene.repo), "--url",
                                  server.url, "--json"])
    assert ran.exit_code == 1, ran.output
    assert json.loads(ran.stdout)["findings"] == report["findings"]


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


def test_a_commit_date_the_ledger_contradicts_is_judged_at_the_ledgers_time(
    scene: Scene,
) -> None:
    """Dated (by hand) long after the lease would have lapsed, but named by the completion
    that came first: it was made before that completion, so it is judged then, within the
    claim, and the date is reported."""
    s1, _, _ = scene.steps
    scene.runtime.ledger.claim(s1, scene.a, lease_seconds=60)
    scene.at(10)
    forged = scene.commit("src/auth/a.py", "work", scene.a,
                          scene.start + timedelta(days=2))
    scene.at(20)
    _complete(scene, s1, scene.a, forged)

    code, report = _audit(scene)

    assert code == 1 and _found(report) == [("clock_disagrees", forged, "auth#1", scene.a)]
    (finding,) = report["findings"]  # type: ignore[misc]
    assert finding["judged_at"] == (scene.start + timedelta(seconds=20)).isoformat()
    assert "judged at the completion" in finding["text"]
    code, report = _audit(scene, "--clock-bound", str(3 * 86400))
    assert (code, report["findings"]) == (0, [])


def test_the_json_report_has_one_shape(scene: Scene) -> None:
    s1, _, _ = scene.steps
    scene.runtime.ledger.claim(s1, scene.a, lease_seconds=LONG)
    scene.commit("src/auth/a.py", "work", scene.a, scene.at(5))
    scene.at(6)
    _complete(scene, s1, scene.a, "abcdef1")  # no such commit
    code, report = _audit(scene)
    assert code == 1
    assert set(report) == {"repo", "dates", "commits_read", "findings", "more",
                           "bound_seconds", "counts"}
    assert report["counts"] == {"outside_claim": 0, "into_reservation": 0,
                                "evidence_missing": 1, "unknown_claim": 0,
                                "clock_disagrees": 0}
    assert "committer's word" in str(report["dates"])
    (finding,) = report["findings"]  # type: ignore[misc]
    assert set(finding) == {"kind", "commit", "text", "step", "step_id", "session",
                            "committed_at", "judged_at", "files"}
    assert (finding["commit"], finding["step_id"]) == ("abcdef1", s1)


def test_since_reads_only_the_commits_after_a_revision(scene: Scene) -> None:
    first = scene.head()
    scene.commit("a.txt", "a", None, scene.at(5))
    scene.commit("b.txt", "b", None, scene.at(6))
    code, report = _audit(scene, "--since", first)
    assert (code, report["commits_read"]) == (0, 2)


def test_a_repository_or_revision_that_cannot_be_read_is_a_message_and_exit_2(
    scene: Scene, tmp_path: Path,
) -> None:
    for args in (["--repo", str(tmp_path / "nowhere")], ["--repo", str(tmp_path)],
                 ["--repo", str(scene.repo), "--since=--all"],
                 ["--repo", str(scene.repo), "--since", "no-such-branch"]):
        ran = runner.invoke(run, ["audit", "git", "--db", str(scene.db), *args])
        assert ran.exception is None and ran.exit_code == 2, (args, ran.output)
        assert ran.stderr.startswith("planledger audit git: "), ran.stderr
    ran = runner.invoke(run, ["audit", "git", "--repo", str(scene.repo), "--db",
                              str(tmp_path / "missing.sqlite")])
    assert ran.exit_code == 1 and "no store at" in ran.stderr
    assert not (tmp_path / "missing.sqlite").exists()


def test_a_hostile_history_never_crashes_the_audit(scene: Scene) -> None:
    """Odd trailers, a message of megabytes, bytes that are no UTF-8, a file name with a
    line break, a date no clock holds: read, and the trailers that do not read reported."""
    s1, _, _ = scene.steps
    odd = [f"Planledger-Step: auth#1 {s1}\nPlanledger-Fence: 99999999999999999999999\n"
           f"Planledger-Session: {scene.a}",
           "Planledger-Step: \u202e auth#1\nPlanledger-Fence: one\nPlanledger-Session: ?",
           "\n".join(f"Planledger-Fence: {n}" for n in range(500)),
           "x" * 3_000_000 + f"\n\nPlanledger-Step: auth#9 {s1}\nPlanledger-Fence: 1\n"
           f"Planledger-Session: {scene.a}"]
    for number, trailers in enumerate(odd):
        (scene.repo / f"f{number}").write_text("x\n")
        scene.git("add", f"f{number}")
        (scene.repo.parent / "message").write_text(f"odd {number}\n\n{trailers}\n")
        scene.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-F",
                  str(scene.repo.parent / "message"), when=scene.at(number + 1))
    (scene.repo / "line\nbreak").write_text("x\n")
    scene.git("add", "--", "line\nbreak")
    (scene.repo.parent / "message").write_bytes(
        b"bytes \xff\xfe\n\nPlanledger-Session: \xff\nPlanledger-Step: \xc3\n")
    scene.git("-c", "core.hooksPath=/dev/null", "commit", "-q", "-F",
              str(scene.repo.parent / "message"), when=scene.at(10))
    tree = scene.git("rev-parse", "HEAD^{tree}").stdout.strip()
    raw = (f"tree {tree}\nparent {scene.head()}\n"
           "author Dev <dev@example.com> 99999999999999999999 +0000\n"
           "committer Dev <dev@example.com> 99999999999999999999 +0000\n\nno date\n")
    odd_date = subprocess.run(["git", "-C", str(scene.repo), "hash-object", "-t", "commit",
                               "-w", "--literally", "--stdin"], input=raw,
                              capture_output=True, text=True, check=True).stdout.strip()
    scene.git("update-ref", "refs/heads/main", odd_date)

    code, report = _audit(scene)

    assert code == 1 and report["commits_read"] == 7
    kinds = [f[0] for f in _found(report)]
    assert kinds == ["unknown_claim"] * 5, report["findings"]
