"""A long-heartbeated step loads from a snapshot, to the same state as a full fold."""

from pathlib import Path

from planledger.api.runtime import open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain.ids import StepId
from planledger.ledger.domain.state import fold_step
from planledger.ledger.store import SNAPSHOT_INTERVAL
from tests.support import OPERATOR
from tests.support.fakes import FakeClock


def test_heartbeated_step_is_snapshotted_and_reloads_to_the_full_fold(tmp_path: Path) -> None:
    db, clock = str(tmp_path / "ledger.sqlite"), FakeClock()
    writer = open_runtime(db, clock=clock)
    _, (step_id,) = writer.ledger.create_plan("p", "P", steps=[NewStep("long job")], actor=OPERATOR)
    session = writer.ledger.start_session()
    writer.ledger.claim(step_id, session.id, lease_seconds=60)
    beats = 2 * SNAPSHOT_INTERVAL + 10
    for _ in range(beats):
        clock.advance(30)
        writer.ledger.heartbeat(step_id, session.id, lease_seconds=60)
    writer.close()

    fresh = open_runtime(db, clock=clock)
    assert fresh.store.snapshots is not None
    snapshots = list(fresh.store.snapshots.get(step_id))
    assert [s.originator_version for s in snapshots] == [SNAPSHOT_INTERVAL, 2 * SNAPSHOT_INTERVAL]
    loaded = fresh.store.step(StepId(step_id))
    full = fold_step(None, fresh.store.events.get(step_id))
    assert loaded == full
    assert loaded.version == beats + 2 and loaded.fence == 1
    fresh.close()
