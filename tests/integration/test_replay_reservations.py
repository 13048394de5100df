"""Path reservations are recorded and re-executed byte for byte: steps declaring paths
(with a plan, added, revised), claims reserving them and adding their own, a heartbeat
adding more, a path bounce, a lapse freeing a reservation, claim-next passing a step by."""

import json
from pathlib import Path

import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger import commands as c
from planledger.ledger.application import Ledger, NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.paths import PathSpec
from planledger.projections.timeline import TimelineModel
from planledger.replays.explore import explore
from planledger.replays.format import RecordingError, write_file
from planledger.replays.reading import read_file
from planledger.replays.recording import export, import_into
from planledger.replays.rerun import rerun
from tests.support import OPERATOR
from tests.support.fakes import FakeClock, SequentialIds

AUTH = PathSpec("internal/auth/**")


def _reserving_log(ledger: Ledger, clock: FakeClock) -> tuple[str, str]:
    """The log; agent B's session and the step it reserves internal/auth/** for."""
    a, b = (ledger.start_session(n).id for n in ("agent A", "agent B"))
    _, (first, second, docs) = ledger.create_plan("p", "P", steps=[
        NewStep("auth", paths=(AUTH,)), NewStep("token", paths=(PathSpec("internal/auth/t.go"),)),
        NewStep("docs")], actor=OPERATOR)
    extra = ledger.execute(c.AddStep("p", "shared read", OPERATOR,
                                     paths=(PathSpec("internal/", "shared"),))).step.id
    ledger.revise_step(docs, title="docs, revised", actor=OPERATOR)
    ledger.execute(c.ReviseStep(docs, OPERATOR, paths=(PathSpec("docs/"),)))
    ledger.execute(c.ReviseStep(extra, OPERATOR, body="why", paths=()))
    clock.advance(1)
    ledger.claim(first, b, lease_seconds=60, paths=[PathSpec("go.mod")])
    try:
        ledger.claim(second, a)
        raise AssertionError("the claim should bounce")
    except errors.PathsHeld:
        pass
    ledger.claim(first, b, lease_seconds=60, paths=[PathSpec("go.sum", "shared")])
    clock.advance(1)
    grant = ledger.claim_next("p", a)  # passes `token` by: its paths are reserved
    assert grant is not None and grant.step_id == docs
    clock.advance(61)  # B's lease lapses, and its reservation with it
    ledger.claim(second, a, paths=[PathSpec("README.md")])
    ledger.complete(second, a)
    return b, first


def test_a_log_with_path_reservations_reexecutes_identically(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    _reserving_log(runtime.ledger, clock)
    path = tmp_path / "reservations.jsonl"
    write_file(export(runtime.store), path)
    recording = read_file(path)
    kinds = {type(e).__name__ for _, e in runtime.store.log_after(0, 10_000)
             if isinstance(e, ev.LedgerEvent)}
    assert {"PathsDeclared", "PathsReserved", "PathsBounced"} <= kinds

    report = rerun(recording)

    assert report.identical, report.describe()
    assert report.refused == 1  # the path bounce
    assert report.events == len(recording.events)


def test_reservations_and_path_bounces_are_timeline_entries(
    runtime: Runtime, clock: FakeClock,
) -> None:
    timelines = TimelineModel(runtime.store, reads=runtime.reads)

    b, _ = _reserving_log(runtime.ledger, clock)

    entries = timelines.timeline("p").entries

    declared = [e.text for e in entries if e.kind == "paths_declared"]
    assert (declared[0], declared[-1]) == ("step 1 touches internal/auth/**",
                                           "step 4 touches no paths")
    (bounce,) = [e for e in entries if e.kind == "paths_bounced"]
    assert bounce.text == (f'claim of step 2 bounced: paths reserved: "internal/auth/**" '
                           f'held by "{b}" (step p#1 "auth")')
    assert bounce.holder == b and bounce.session_id != b
    reserved = [e.text for e in entries if e.kind == "reserved"]
    assert reserved[:2] == ["reserved internal/auth/**, go.mod for step 1 (fence 1)",
                            "reserved internal/auth/**, go.mod, go.sum (shared) for step 1 "
                            "(fence 1)"]


def test_a_recording_with_reservations_is_admitted_and_a_forged_one_refused(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    _reserving_log(runtime.ledger, clock)
    path = tmp_path / "reservations.jsonl"
    write_file(export(runtime.store), path)
    imported = open_runtime("memory", clock=FakeClock(), ids=SequentialIds())
    try:
        assert import_into(imported.store, read_file(path)) == len(read_file(path).events)
    finally:
        imported.close()

    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if ":PathsReserved" in line)
    forged = json.loads(lines[at])
    forged["state"]["fence"] = 7  # a reservation no claim at that fence made
    lines[at] = json.dumps(forged, ensure_ascii=False, separators=(",", ":")) + "\n"
    path.write_text("".join(lines))
    target = open_runtime("memory", clock=FakeClock(), ids=SequentialIds())
    try:
        with pytest.raises(RecordingError, match=r"PathsReserved .* is not held at fence 7"):
            import_into(target.store, read_file(path))
    finally:
        target.close()


def test_explore_finds_both_outcomes_of_a_race_on_overlapping_paths(
    runtime: Runtime, clock: FakeClock, tmp_path: Path,
) -> None:
    ledger = runtime.ledger
    _, (rotate, limit) = ledger.create_plan("race", "Race", steps=[
        NewStep("rotate", paths=(AUTH,)),
        NewStep("limit", paths=(PathSpec("internal/auth/limit.go"),))], actor=OPERATOR)
    a, b = (ledger.start_session(n).id for n in ("agent A", "agent B"))
    clock.advance(1)
    ledger.claim(rotate, a)
    with pytest.raises(errors.PathsHeld):
        ledger.claim(limit, b)
    path = tmp_path / "paths-race.jsonl"
    write_file(export(runtime.store), path)

    report = explore(read_file(path))

    lines = {tuple(o.outcome.lines()[:2]) for o in report.outcomes}
    assert ('step 1 "rotate": agent A wins it', 'step 2 "limit": nobody wins it; agent B '
            'loses it') in lines
    assert ('step 1 "rotate": nobody wins it; agent A loses it',
            'step 2 "limit": agent B wins it') in lines
    ways = {w for o in report.outcomes for w, _ in o.ways}
    assert "agent B bounced off agent A's paths on step 2" in ways
