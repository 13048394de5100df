"""After a failover to a standby that lost the log's newest events (issue 33), nothing this
process cached or folded may run ahead of the log: the next write on a step is not appended
past the hole, and the read models agree with one folded afresh.

A failover is played here by deleting the newest rows of the log, and putting the head row
back as it was before them (the standby never received either), while the in-process
replicas hold those events cached and folded. Where asked, the log's sequence is set back
too, so new events take the lost events' positions, as a promoted server may hand out."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from psycopg import sql

from planledger.api.cli.audit import verify_store
from planledger.api.runtime import Runtime, open_runtime
from planledger.bench.servers import SECRET
from planledger.infra.pg_append import APPEND_ARGUMENTS, APPEND_FUNCTION, HEAD_TABLE
from planledger.infra.pg_follower import PgFollower
from planledger.infra.pg_schema import EVENTS_TABLE
from planledger.ledger.application import NewStep
from planledger.ledger.chain import Verified
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug
from planledger.ledger.storage import postgres_options
from planledger.projections import queries
from planledger.projections.follower import follow
from planledger.projections.readmodel import ReadModel
from tests.support import OPERATOR
from tests.support.live_server import live_server, session
from tests.support.postgres import BASE_URL, fresh_schema

TIMEOUT = 30.0
PLAN = PlanSlug("p")


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as made:
        yield made


def _open(url: str) -> Runtime:
    return open_runtime(url, secret=SECRET.encode())


@contextmanager
def lost_in_a_failover(url: str, *, same_positions: bool = False) -> Iterator[None]:
    """Every event appended in the block is lost, with the head row they moved; the log's
    sequence goes on past them (by the 32 a promoted server may skip), or, with
    `same_positions`, from where it was before the block."""
    schema = postgres_options(url)["schema"]
    events = sql.Identifier(schema, EVENTS_TABLE)
    head = sql.Identifier(schema, HEAD_TABLE)
    with psycopg.connect(BASE_URL, autocommit=True) as conn:
        mark = _end(conn, events)
        kept = conn.execute(sql.SQL("SELECT position, tip, signed_position, signed_tip, mac "
                                    "FROM {} WHERE id = 1").format(head)).fetchone()
        assert kept is not None
        yield
        lost = _end(conn, events)
        assert lost > mark, "the block appended nothing to lose"
        with conn.transaction():
            conn.execute(sql.SQL("DELETE FROM {} WHERE notification_id > %s").format(events),
                         (mark,))
            conn.execute(sql.SQL("UPDATE {} SET position = %s, tip = %s, signed_position = %s, "
                                 "signed_tip = %s, mac = %s WHERE id = 1").format(head), kept)
            conn.execute("SELECT setval(pg_get_serial_sequence(%s, 'notification_id'), %s)",
                         (f'"{schema}".{EVENTS_TABLE}', mark if same_positions else lost + 32))


def _end(conn: psycopg.Connection[Any], events: sql.Identifier) -> int:
    row = conn.execute(sql.SQL("SELECT coalesce(max(notification_id), 0) FROM {}").format(
        events)).fetchone()
    assert row is not None
    return int(row[0])


def _versions(runtime: Runtime) -> dict[str, list[int]]:
    """Each stream's versions, in log order."""
    found: dict[str, list[int]] = {}
    for _, event in runtime.store.log_after(0, 1_000_000):
        found.setdefault(event.originator_id, []).append(event.originator_version)
    return found


def _assert_intact(runtime: Runtime) -> None:
    """Every stream's versions run 1, 2, 3 ... and `audit verify` calls the store intact."""
    for stream, versions in _versions(runtime).items():
        assert versions == list(range(1, len(versions) + 1)), (stream, versions)
    chains, head = verify_store(runtime)
    assert isinstance(chains, Verified), chains
    assert head is not None and head.intact, head


def test_a_complete_decided_on_a_lost_claim_is_refused_and_leaves_no_version_gap(
    url: str,
) -> None:
    runtime = _open(url)
    try:
        ledger = runtime.ledger
        _, (step,) = ledger.create_plan(PLAN, "P", steps=[NewStep("one")], actor=OPERATOR)
        worker = ledger.start_session("worker")
        with lost_in_a_failover(url):
            ledger.claim(step, worker.id)
        # This replica still holds the lost claim (version 2) as the step's state.
        assert runtime.store.step(step, cached=True).holder == worker.id
        with pytest.raises(errors.LedgerError) as refused:
            ledger.complete(step, worker.id)  # decided on the cache: version 3, then again
        assert not isinstance(refused.value, errors.Contention), refused.value
        assert runtime.store.step(step).version == 1  # read again from the log
        ledger.claim(step, worker.id)
        ledger.complete(step, worker.id)
        assert runtime.store.step(step).status == "done"
        _assert_intact(runtime)
    finally:
        runtime.close()


def test_over_http_a_write_on_a_lost_claim_answers_a_conflict_never_a_500(url: str) -> None:
    runtime = _open(url)
    try:
        _, (step,) = runtime.ledger.create_plan(PLAN, "P", steps=[NewStep("one")],
                                                actor=OPERATOR)
        with live_server(runtime) as server, server.client() as client:
            _, worker = session(client, "worker")
            with lost_in_a_failover(url):
                claimed = client.post(f"/api/steps/{step}/claim", headers=worker)
                assert claimed.status_code == 200, claimed.text
            fence = claimed.json()["fence"]
            completed = client.post(f"/api/steps/{step}/complete", headers=worker,
                                    json={"fence": fence})
            assert completed.status_code == 409, completed.text
            again = client.post(f"/api/steps/{step}/claim", headers=worker)
            assert again.status_code == 200, again.text
            done = client.post(f"/api/steps/{step}/complete", headers=worker,
                               json={"fence": again.json()["fence"]})
            assert done.status_code == 200, done.text
        _assert_intact(runtime)
    finally:
        runtime.close()


def _readiness(model: ReadModel) -> tuple[list[str], int, dict[str, object]]:
    """What the model tells of the plan: its ready steps, how many are done, and all of it
    (without pulling from the log)."""
    view, moment = model.view, model.clock.now()
    ready = list(queries.ready_ids(view, PLAN, moment))
    done = sum(1 for s in view.steps.values() if s.plan == PLAN and s.status == "done")
    return ready, done, model.facts()


@pytest.mark.parametrize("same_positions", [False, True], ids=["higher", "same"])
def test_read_models_that_folded_the_lost_events_agree_with_a_fresh_one(
    url: str, same_positions: bool,
) -> None:
    """One replica's model pulls on every read, the other's only follows the log
    (LISTEN/NOTIFY and its resync); both folded a completion the failover lost."""
    writer, reader = _open(url), _open(url)
    following = ReadModel(reader.store, reader.reads.clock, pull_on_read=False, tail=PgFollower)
    follower = follow(following)
    try:
        ledger = writer.ledger
        _, (first, second) = ledger.create_plan(
            PLAN, "P", steps=[NewStep("one"), NewStep("two")], actor=OPERATOR)
        worker = ledger.start_session("worker")
        ledger.claim(first, worker.id)
        with lost_in_a_failover(url, same_positions=same_positions):
            ledger.complete(first, worker.id)
            lost_at = writer.store.last_position()
            assert lost_at is not None
            writer.reads.wait_for(lost_at, TIMEOUT)
            assert follower.wait_for(lost_at, TIMEOUT)
            assert _readiness(following)[1] == 1  # folded the lost completion
        # The promoted server's log goes on: new events, past the lost position.
        other = _open(url)
        try:
            while (other.store.last_position() or 0) <= lost_at:
                other.ledger.start_session("after the failover")
            newest = other.store.last_position()
            assert newest is not None
        finally:
            other.close()
        writer.reads.wait_for(newest, TIMEOUT)
        assert follower.wait_for(newest, TIMEOUT)
        fresh = ReadModel(writer.store, writer.reads.clock)
        fresh.catch_up()
        expected = _readiness(fresh)
        assert expected[:2] == ([second], 0)  # the first is held again, not done
        with writer.reads.lock:
            assert _readiness(writer.reads) == expected
        with following.lock:
            assert _readiness(following) == expected
        # The writer's store dropped its kept states too: the completion lands at version 3.
        ledger.complete(first, worker.id)
        _assert_intact(writer)
    finally:
        follower.stop()
        reader.close()
        writer.close()


def test_the_append_function_refuses_a_version_with_none_before_it(url: str) -> None:
    runtime = _open(url)
    try:
        _, (step,) = runtime.ledger.create_plan(PLAN, "P", steps=[NewStep("one")],
                                                actor=OPERATOR)
    finally:
        runtime.close()
    schema = postgres_options(url)["schema"]
    function = sql.Identifier(schema, APPEND_FUNCTION)
    with psycopg.connect(BASE_URL, autocommit=True) as conn:
        assert conn.execute("SELECT to_regprocedure(%s)", (
            f'"{schema}".{APPEND_FUNCTION}({APPEND_ARGUMENTS})',)).fetchone() != (None,)
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(sql.SQL(
                "SELECT * FROM {}(ARRAY[%s], ARRAY[3::bigint], ARRAY['t'], ARRAY['{{}}'::bytea], "
                "'5s', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', '{{}}', NULL)").format(function),
                (step,))
        assert refused.value.sqlstate == "PLGAP"
        assert refused.value.diag.message_primary == (
            f"version gap: stream {step} has no version 2, so version 3 is refused")
        row = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE originator_id = %s").format(
            sql.Identifier(schema, EVENTS_TABLE)), (step,)).fetchone()
        assert row == (1,)  # nothing written
