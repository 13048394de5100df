"""Appends on PostgreSQL (infra.pg_append): one server-side call that takes the log's table
lock, so notification ids follow commit order, and releases it when the server commits."""

import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
from psycopg import sql

from planledger.api.runtime import open_runtime
from planledger.infra.pg_append import APPEND_FUNCTION
from planledger.infra.pg_schema import EVENTS_TABLE
from planledger.ledger.storage import postgres_options
from tests.support.postgres import BASE_URL, fresh_schema

DEADLINE = 30.0


def _waiting_on_the_lock(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        "AND query LIKE %s", (f"%{APPEND_FUNCTION}%",)).fetchone()
    return row is not None and int(str(row[0])) > 0


def test_an_append_takes_the_log_lock_and_lands_once_another_holder_lets_go() -> None:
    # ROW SHARE conflicts with the EXCLUSIVE lock an append takes, not with a plain INSERT:
    # an append that skipped the lock (as the library's own function does) would not wait.
    with fresh_schema() as url, psycopg.connect(BASE_URL) as holder, \
            psycopg.connect(BASE_URL, autocommit=True) as watcher:
        runtime = open_runtime(url)
        try:
            table = sql.Identifier(postgres_options(url)["schema"], EVENTS_TABLE)
            holder.execute(sql.SQL("LOCK TABLE {} IN ROW SHARE MODE").format(table))
            with ThreadPoolExecutor(1) as pool:
                started = pool.submit(runtime.ledger.start_session, "behind the lock")
                deadline = time.monotonic() + DEADLINE
                while not _waiting_on_the_lock(watcher):  # polling with a deadline
                    assert not started.done(), "the append did not wait for the table lock"
                    assert time.monotonic() < deadline, "the append never reached the lock"
                    time.sleep(0.01)
                holder.commit()  # releases the lock
                session = started.result(DEADLINE)
            assert runtime.store.session(session.id).name == "behind the lock"
        finally:
            runtime.close()
