"""What a red-team pass over issue 17's fixes still got through, one test per finding.

Each was first a strict xfail naming the hole; each passes now that its hole is closed,
and fails again if it reopens."""

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from planledger.api.cli.audit import verify_store
from planledger.api.runtime import open_runtime
from planledger.infra.secret import SECRET_ENV, SecretError, load_secret
from planledger.ledger.application import NewStep
from planledger.main import run as app
from planledger.replays.fixture import seed_auth_refresh
from planledger.replays.format import write_file
from planledger.replays.recording import export
from tests.support.cli_runner import CliRunner
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.forgery import Lines
from tests.support.forgery import events as _events
from tests.support.forgery import resealed as _resealed

runner = CliRunner()
FAR_FUTURE = "9999-12-31T23:59:59.999999+00:00"


# --- helpers: a real recording, edited and re-hashed as a forger would -----------------


@pytest.fixture
def lines(tmp_path: Path, clock: FakeClock) -> Lines:
    """The seed's plan, then two live sessions: "holder" claims a step and completes it,
    "other" only starts."""
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    seed_auth_refresh(runtime.ledger, race=True)
    holder = runtime.ledger.start_session("holder")
    runtime.ledger.start_session("other")
    grant = runtime.ledger.claim_next("auth-refresh", holder.id)
    assert grant is not None
    runtime.ledger.complete(grant.step_id, holder.id)
    path = tmp_path / "good.jsonl"
    write_file(export(runtime.store), path)
    runtime.close()
    return [json.loads(text) for text in path.read_text().splitlines()]




def _write(lines: Lines, path: Path) -> Path:
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    return path


def _without(lines: Lines, event: dict[str, Any]) -> Lines:
    return [line for line in lines if line is not event]


def _session_named(lines: Lines, name: str) -> str:
    return str(next(e["state"]["session_id"] for e in _events(lines, ":SessionStarted")
                    if e["state"]["name"] == name))


def _last_claim_left_open(lines: Lines) -> tuple[Lines, dict[str, Any]]:
    """The recording without the newest completion, and the claim it closed (now live)."""
    completion = _events(lines, ":StepCompleted")[-1]
    claim = [e for e in _events(lines, ":StepClaimed") if e["stream"] == completion["stream"]][-1]
    return _without(lines, completion), claim


def _import(lines: Lines, tmp_path: Path) -> tuple[int, str, str]:
    db = str(tmp_path / "imported.sqlite")
    result = runner.invoke(app, ["replay", "import", str(_write(lines, tmp_path / "r.jsonl")),
                                 "--db", db])
    return result.exit_code, result.output, db


# --- the signed head --------------------------------------------------------------------


def test_a_tail_cut_with_its_head_stays_visible_after_the_next_append(
    tmp_path: Path, clock: FakeClock,
) -> None:
    db = str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db, clock=clock, ids=SequentialIds())
    seed_auth_refresh(runtime.ledger, race=True)
    runtime.close()
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM stored_events WHERE rowid > (SELECT MAX(rowid) - 3 "
                     "FROM stored_events)")
        conn.execute("DELETE FROM planledger_head")
    runtime = open_runtime(db, clock=clock)
    runtime.ledger.start_session("a stranger's session start")  # what anyone may do

    _, head = verify_store(runtime)
    runtime.close()

    assert head is not None and not head.intact, head


# --- recordings -------------------------------------------------------------------------


def test_audit_verify_of_a_recording_cut_short_is_not_intact(lines: Lines,
                                                            tmp_path: Path) -> None:
    cut = _write(lines[:-2], tmp_path / "cut.jsonl")

    result = runner.invoke(app, ["audit", "verify", str(cut)])

    assert result.exit_code == 1 and "truncated or edited" in result.output, result.output


@pytest.mark.parametrize("text", ["", '{"hello": 1}\n'])
def test_audit_verify_of_a_file_that_is_no_recording_is_not_intact(text: str,
                                                                  tmp_path: Path) -> None:
    path = tmp_path / "not-a-recording.jsonl"
    path.write_text(text)

    result = runner.invoke(app, ["audit", "verify", str(path)])

    assert result.exit_code != 0, result.output


def test_a_recording_dated_in_the_far_future_cannot_break_later_claims(
    lines: Lines, tmp_path: Path,
) -> None:
    last = max(_events(lines), key=lambda e: int(e["position"]))
    last["state"]["timestamp"]["_data_"] = FAR_FUTURE
    last["time"] = FAR_FUTURE
    code, _, db = _import(_resealed(lines), tmp_path)
    if code != 0:
        return  # refused: what should happen (naming the line)
    runtime = open_runtime(db)
    try:
        session = runtime.ledger.start_session("after the import")
        _, ids = runtime.ledger.create_plan("after", "after", {}, [NewStep("a step")],
                                            actor=session.id)
        runtime.ledger.claim(ids[0], session.id)
    finally:
        runtime.close()


def test_a_claim_whose_expiry_does_not_match_its_lease_is_refused(lines: Lines,
                                                                  tmp_path: Path) -> None:
    lines, claim = _last_claim_left_open(lines)
    claim["state"]["expires_at"]["_data_"] = FAR_FUTURE

    code, out, _ = _import(_resealed(lines), tmp_path)

    assert code != 0 and "StepClaimed" in out, out


def test_a_completion_by_a_session_that_does_not_hold_the_step_is_refused(
    lines: Lines, tmp_path: Path,
) -> None:
    completion = _events(lines, ":StepCompleted")[-1]
    other = _session_named(lines, "other")
    completion["state"]["session_id"] = completion["state"]["actor"] = other
    completion["session"] = other

    code, out, _ = _import(_resealed(lines), tmp_path)

    assert code != 0 and "StepCompleted" in out, out


def test_a_claim_over_another_sessions_live_lease_is_refused(lines: Lines,
                                                             tmp_path: Path) -> None:
    lines, claim = _last_claim_left_open(lines)
    other = _session_named(lines, "other")
    steal = json.loads(json.dumps(claim))
    steal.update(position=max(int(e["position"]) for e in _events(lines)) + 1,
                 version=int(claim["version"]) + 1, session=other, command=None)
    steal["state"].update(session_id=other, actor=other, fence=int(claim["state"]["fence"]) + 1)
    lines.append(steal)

    code, out, _ = _import(_resealed(lines), tmp_path)

    assert code != 0 and "StepClaimed" in out, out


@pytest.mark.parametrize("erase", ["removed", "null"])
def test_an_event_without_an_actor_is_refused(erase: str, lines: Lines,
                                              tmp_path: Path) -> None:
    created = _events(lines, ":PlanCreated")[0]
    if erase == "removed":
        del created["state"]["actor"]
    else:
        created["state"]["actor"] = None

    code, out, _ = _import(_resealed(lines), tmp_path)

    assert code != 0 and "PlanCreated" in out, out


def test_a_completion_by_a_session_that_ended_is_refused(lines: Lines,
                                                        tmp_path: Path) -> None:
    """The holder's session ends (releasing nothing, as if its lease were not its own),
    then its completion follows: a closed session writes nothing."""
    completion = _events(lines, ":StepCompleted")[-1]
    holder = str(completion["state"]["session_id"])
    started = next(e for e in _events(lines, ":SessionStarted") if e["stream"] == holder)
    last = [e for e in _events(lines) if e["stream"] == holder][-1]
    ended = json.loads(json.dumps(started))
    ended.update(topic=started["topic"].replace("SessionStarted", "SessionEnded"),
                 version=int(last["version"]) + 1, command=None,
                 position=int(completion["position"]))
    ended["state"] = {k: v for k, v in started["state"].items() if k != "name"}
    ended["state"]["released"] = []
    ended["state"]["timestamp"] = completion["state"]["timestamp"]
    ended["time"] = completion["time"]
    for line in _events(lines):
        if int(line["position"]) >= int(completion["position"]):
            line["position"] = int(line["position"]) + 1
    lines.insert(lines.index(completion), ended)

    code, out, _ = _import(_resealed(lines), tmp_path)

    assert code != 0 and "StepCompleted" in out and "has ended" in out, out


def test_a_recording_dated_in_the_future_is_refused_naming_the_line(
    lines: Lines, tmp_path: Path,
) -> None:
    last = max(_events(lines), key=lambda e: int(e["position"]))
    last["state"]["timestamp"]["_data_"] = last["time"] = "2999-01-01T00:00:00+00:00"

    code, out, _ = _import(_resealed(lines), tmp_path)

    assert code != 0 and "is dated 2999-01-01" in out and "line" in out, out


# --- the secret file --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["directory", "dangling symlink"])
def test_a_secret_path_that_is_no_readable_file_is_refused_naming_it(
    kind: str, tmp_path: Path,
) -> None:
    secret = tmp_path / "ledger.sqlite.secret"
    if kind == "directory":
        secret.mkdir()
    else:
        secret.symlink_to(tmp_path / "nowhere" / "secret")

    with pytest.raises(SecretError, match=r"ledger\.sqlite\.secret"):
        load_secret(str(tmp_path / "ledger.sqlite"))


def test_a_secret_path_that_is_a_fifo_is_refused_without_waiting_for_a_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    os.mkfifo(tmp_path / "ledger.sqlite.secret")

    with pytest.raises(SecretError, match=r"ledger\.sqlite\.secret is a FIFO"):
        load_secret(str(tmp_path / "ledger.sqlite"))


def test_a_secret_path_that_is_a_symlink_to_a_file_is_read(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            ) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    (tmp_path / "mounted").write_text("s" * 40 + "\n")
    (tmp_path / "ledger.sqlite.secret").symlink_to(tmp_path / "mounted")

    assert load_secret(str(tmp_path / "ledger.sqlite")) == b"s" * 40


def test_a_start_refused_for_a_short_secret_creates_no_store_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SECRET_ENV, "short")

    with pytest.raises(SecretError, match="PLANLEDGER_SECRET is 5 bytes"):
        open_runtime(str(tmp_path / "ledger.sqlite"), checkpoints=True)

    assert sorted(p.name for p in tmp_path.iterdir()) == []


# --- a red-team pass over evidence, the guard's chaining and the heartbeat ------------------


def test_a_store_whose_heartbeat_kept_a_longer_lease_imports(tmp_path: Path,
                                                             clock: FakeClock) -> None:
    """A heartbeat never shortens a lease (ledger.domain.claims): its event keeps the
    expiry granted before, later than its own `lease_seconds` from now. The ledger's own
    export of that must import, not be refused as a forged expiry."""
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    seed_auth_refresh(runtime.ledger, race=True)
    holder = runtime.ledger.start_session("holder")
    grant = runtime.ledger.claim_next("auth-refresh", holder.id, lease_seconds=600)
    assert grant is not None
    clock.advance(5)
    renewed = runtime.ledger.heartbeat(grant.step_id, holder.id, 60)
    assert renewed.expires_at == grant.expires_at
    path = tmp_path / "heartbeat.jsonl"
    write_file(export(runtime.store), path)
    runtime.close()

    code, out, _ = _import([json.loads(t) for t in path.read_text().splitlines()], tmp_path)

    assert code == 0, out


def test_a_renewal_whose_expiry_is_past_both_leases_is_still_refused(
    tmp_path: Path, clock: FakeClock,
) -> None:
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    seed_auth_refresh(runtime.ledger, race=True)
    holder = runtime.ledger.start_session("holder")
    grant = runtime.ledger.claim_next("auth-refresh", holder.id, lease_seconds=600)
    assert grant is not None
    clock.advance(5)
    runtime.ledger.heartbeat(grant.step_id, holder.id, 60)
    path = tmp_path / "heartbeat.jsonl"
    write_file(export(runtime.store), path)
    runtime.close()
    forged = [json.loads(t) for t in path.read_text().splitlines()]
    _events(forged, ":LeaseRenewed")[-1]["state"]["expires_at"]["_data_"] = FAR_FUTURE

    code, out, _ = _import(_resealed(forged), tmp_path)

    assert code != 0 and "LeaseRenewed" in out, out


def _completed_with_evidence(tmp_path: Path, clock: FakeClock, strict: bool = False) -> Lines:
    """A recording in which "holder" completes a step with evidence of one commit, in a
    plan that requires every check to pass when `strict`."""
    from planledger.ledger import commands as c
    from planledger.ledger.domain.evidence import Evidence

    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    holder = runtime.ledger.start_session("holder")
    made = runtime.ledger.execute(c.CreatePlan("strict", "Strict", holder.id, (),
                                               (NewStep("ship it"),), strict))
    ids = list(made.step_ids)
    runtime.ledger.claim(ids[0], holder.id)
    runtime.ledger.execute(c.Complete(ids[0], holder.id, None, None,
                                      Evidence(("abcdef1",))))
    path = tmp_path / "evidence.jsonl"
    write_file(export(runtime.store), path)
    runtime.close()
    return [json.loads(text) for text in path.read_text().splitlines()]


@pytest.mark.parametrize("evidence", [
    {"commits": "abcdef1", "branch": None, "pr": None, "checks": 5},
    {"commits": [], "branch": None, "pr": "javascript:alert(1)", "checks": []},
    {"commits": [], "branch": "feature/\u202eevil", "pr": None, "checks": []},
    {"commits": ["ABCDEF1"], "branch": None, "pr": None, "checks": []},
    {"commits": [], "branch": None, "pr": None,
     "checks": [{"name": "t", "result": "pass", "command": None, "summary": "x" * 50_000}]},
    {"commits": [], "branch": None, "pr": None, "checks": [], "signed_off": True},
])
def test_a_completion_whose_evidence_the_ledger_would_refuse_is_refused(
    evidence: dict[str, Any], tmp_path: Path, clock: FakeClock,
) -> None:
    """An imported completion's evidence is checked as a completion's is: the console,
    the timelines and `planledger step` read it as the ledger keeps it."""
    lines = _completed_with_evidence(tmp_path, clock)
    _events(lines, ":StepCompleted")[-1]["state"]["evidence"] = evidence

    code, out, _ = _import(_resealed(lines), tmp_path)

    assert code != 0 and "StepCompleted" in out, out


def test_a_completion_with_a_failed_check_in_a_strict_plan_is_refused(
    tmp_path: Path, clock: FakeClock,
) -> None:
    lines = _completed_with_evidence(tmp_path, clock, strict=True)
    _events(lines, ":StepCompleted")[-1]["state"]["evidence"] = {
        "commits": [], "branch": None, "pr": None,
        "checks": [{"name": "tests", "result": "fail", "command": None, "summary": None}]}

    code, out, _ = _import(_resealed(lines), tmp_path)

    assert code != 0 and 'check "tests" failed' in out, out


def test_a_completion_with_evidence_as_the_ledger_keeps_it_imports(
    tmp_path: Path, clock: FakeClock,
) -> None:
    code, out, _ = _import(_completed_with_evidence(tmp_path, clock, strict=True), tmp_path)

    assert code == 0, out
