"""PostgreSQL replicas resume their read models from a checkpoint of the same log, which
they share: one replica's shutdown lets the next start (any replica) skip the fold."""

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from planledger.api.runtime import open_runtime
from planledger.infra.pg_checkpoints import PG_CHECKPOINT_TABLE, PG_TRACKING_TABLE
from planledger.infra.pg_schema import missing_objects
from planledger.ledger.storage import postgres_options
from tests.integration.test_projection_rebuild import assert_same_as_a_rebuild, random_workload
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.postgres import BASE_URL, fresh_schema

# Replicas share the store's secret (PLANLEDGER_SECRET): checkpoints are tagged under it.
SECRET = b"the replicas' shared secret, 32 bytes or more"


@pytest.fixture
def pg() -> Iterator[str]:
    with fresh_schema() as url:
        yield url


def test_a_replica_resumes_from_the_checkpoint_another_saved(pg: str, clock: FakeClock) -> None:
    assert missing_objects(pg) == ()  # db init made the checkpoint tables with the log's
    first = open_runtime(pg, clock=clock, ids=SequentialIds(), checkpoints=True, secret=SECRET)
    random_workload(first, clock, seed=41, commands=150)
    saved_at = first.reads.catch_up()
    first.close(checkpoint=True)  # as a server shutting down

    second = open_runtime(pg, clock=clock, checkpoints=True, secret=SECRET)
    try:
        assert second.reads.resumed_from == saved_at
        random_workload(second, clock, seed=42, commands=50)
        assert_same_as_a_rebuild(second, clock)
    finally:
        second.close()


def test_a_checkpoint_of_another_log_in_the_same_tables_is_ignored(
    pg: str, clock: FakeClock
) -> None:
    saver = open_runtime(pg, clock=clock, ids=SequentialIds(), checkpoints=True, secret=SECRET)
    random_workload(saver, clock, seed=43, commands=80)
    saver.reads.catch_up()
    saver.close(checkpoint=True)
    schema = postgres_options(pg)["schema"]
    with psycopg.connect(BASE_URL, autocommit=True) as conn:  # the log is replaced
        conn.execute(sql.SQL("TRUNCATE {}.planledger_events").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("TRUNCATE {}.planledger_snapshots").format(sql.Identifier(schema)))
        found = conn.execute(sql.SQL("SELECT count(*) FROM {}.{}, {}.{}").format(
            sql.Identifier(schema), sql.Identifier(PG_CHECKPOINT_TABLE),
            sql.Identifier(schema), sql.Identifier(PG_TRACKING_TABLE))).fetchone()
        assert found is not None and found[0] >= 1  # the old checkpoint is still there
    other = open_runtime(pg, clock=clock, ids=SequentialIds())
    random_workload(other, clock, seed=44, commands=200)
    other.close()

    restarted = open_runtime(pg, clock=clock, checkpoints=True, secret=SECRET)
    try:
        assert restarted.reads.resumed_from == 0
        assert_same_as_a_rebuild(restarted, clock)
    finally:
        restarted.close()
