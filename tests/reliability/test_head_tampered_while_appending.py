"""A process that keeps appending moves the signed head without reading it first while the
head is, whole, the one it wrote last; a head changed or deleted under it meanwhile is
still left as evidence, never signed over by its next append."""

import sqlite3
from pathlib import Path

import pytest

from planledger.api.cli.audit import verify_store
from planledger.api.runtime import Runtime, open_runtime
from planledger.infra.sqlite_head import HEAD_TABLE
from planledger.ledger.log_head import Finding, HeadSigner, head_mac
from planledger.replays.fixture import seed_auth_refresh
from tests.support.fakes import FakeClock, SequentialIds


@pytest.fixture
def live(tmp_path: Path, clock: FakeClock) -> Runtime:
    runtime = open_runtime(str(tmp_path / "ledger.sqlite"), clock=clock, ids=SequentialIds())
    seed_auth_refresh(runtime.ledger, race=True)  # this process wrote the head last
    return runtime


def _tamper(runtime: Runtime, statement: str) -> None:
    with sqlite3.connect(runtime.db) as conn:
        conn.execute(statement)


def _append_then_verify(runtime: Runtime) -> Finding:
    try:
        runtime.ledger.start_session("the next append")
        _, head = verify_store(runtime)
    finally:
        runtime.close()
    assert head is not None
    return head


def test_a_live_process_appending_keeps_its_head_matching_the_log(live: Runtime) -> None:
    head = _append_then_verify(live)

    assert head.intact and "matches the log" in head.message, head


@pytest.mark.parametrize("change", ["mac = NULL", "mac = 'ab' || substr(mac, 3)",
                                    "tip = 'ab' || substr(tip, 3)"])
def test_a_head_altered_under_a_live_process_is_not_signed_over_by_its_next_append(
    live: Runtime, change: str,
) -> None:
    _tamper(live, f"UPDATE {HEAD_TABLE} SET {change}")

    head = _append_then_verify(live)

    assert not head.intact, head


def test_a_head_deleted_under_a_live_process_stays_missing_after_its_next_append(
    live: Runtime,
) -> None:
    _tamper(live, f"DELETE FROM {HEAD_TABLE}")

    head = _append_then_verify(live)

    assert not head.intact and "no signed head" in head.message, head


@pytest.mark.parametrize(("position", "tip"), [(0, ""), (1, "a" * 64), (10**12, "f" * 64)])
def test_the_append_path_signer_signs_as_head_mac(position: int, tip: str) -> None:
    key = b"k" * 32

    assert HeadSigner(key).mac(position, tip) == head_mac(key, position, tip)
