"""The PostgreSQL follower: LISTEN/NOTIFY wakes it, it applies every event once and in order,
and an append whose NOTIFY reached nobody still arrives within the resync interval."""

import threading
import time
from collections.abc import Iterator, Sequence
from multiprocessing.synchronize import Barrier

import psycopg
import pytest
from eventsourcing.persistence import Notification
from psycopg import sql

from planledger.api.runtime import open_runtime
from planledger.infra.clock_ids import SystemClock
from planledger.infra.persistence import open_event_store
from planledger.infra.pg_follower import PgFollower
from planledger.infra.pg_schema import EVENTS_TABLE
from planledger.ledger.application import NewStep
from planledger.ledger.domain.events import SessionStarted
from planledger.ledger.domain.ids import PlanSlug, SessionId
from planledger.ledger.storage import postgres_options
from planledger.ledger.store import EventStore
from planledger.projections.follower import follow
from planledger.projections.readmodel import ReadModel
from tests.support import OPERATOR
from tests.support.fakes import EPOCH
from tests.support.postgres import BASE_URL, fresh_schema
from tests.support.processes import processes

NEVER = 3600.0  # a resync interval that never fires: only NOTIFY can wake the follower
TIMEOUT = 60


class Collected:
    """A stand-in read model: the notification ids it applied, each at most once."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, notes: Sequence[Notification]) -> int:
        with self.lock:
            for note in notes:
                if not self.ids or note.id > self.ids[-1]:
                    self.ids.append(note.id)
            return self.ids[-1] if self.ids else 0


@pytest.fixture
def pg() -> Iterator[str]:
    with fresh_schema(pool_size=2, max_overflow=2) as url:
        yield url


@pytest.fixture
def store(pg: str) -> Iterator[EventStore]:
    the_store = open_event_store(pg)
    yield the_store
    the_store.close()


def _start_sessions(url: str, count: int, barrier: Barrier) -> None:
    runtime = open_runtime(url)
    barrier.wait(TIMEOUT)
    for i in range(count):
        runtime.ledger.start_session(f"writer-{i}")
    runtime.close()


def test_events_from_four_writer_processes_are_each_applied_once_in_log_order(
    pg: str, store: EventStore
) -> None:
    seen = Collected()
    follower = PgFollower(store, seen, resync_seconds=NEVER).start()
    ctx = processes()
    barrier = ctx.Barrier(4)
    writers = [ctx.Process(target=_start_sessions, args=(pg, 50, barrier)) for _ in range(4)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(TIMEOUT)
        assert w.exitcode == 0
    last = store.recorder.max_notification_id() or 0
    assert follower.wait_for(last, timeout=10)
    follower.stop()
    logged = [n.id for n in store.recorder.select_notifications(start=1, limit=10_000)]
    assert len(logged) == 200 and seen.ids == logged


def test_an_append_by_another_process_wakes_the_follower_with_no_poll(
    pg: str, store: EventStore
) -> None:
    seen = Collected()
    follower = PgFollower(store, seen, resync_seconds=NEVER).start()
    other = open_runtime(pg)
    try:
        other.ledger.start_session("early")  # the subscription is surely listening after it
        assert follower.wait_for(1, timeout=10)
        # The follower never polls (resync NEVER): each append reaches it by NOTIFY or not
        # at all, so arriving is the proof, however busy the machine (the bench times it).
        for i in range(5):
            other.ledger.start_session(f"s{i}")
            assert follower.wait_for(i + 2, timeout=30), f"append {i} never woke the follower"
    finally:
        other.close()
        follower.stop()


def test_an_append_whose_notify_reached_nobody_arrives_within_the_resync_interval(
    pg: str, store: EventStore
) -> None:
    seen = Collected()
    follower = PgFollower(store, seen, resync_seconds=0.2).start()
    schema = postgres_options(pg)["schema"]
    try:
        store.append([_session_started("loud")])  # NOTIFYs: the follower is live after it
        assert follower.wait_for(1, timeout=10)
        with psycopg.connect(BASE_URL, autocommit=True) as conn:  # an insert with no NOTIFY
            conn.execute(sql.SQL(
                "INSERT INTO {}.{} (originator_id, originator_version, topic, state) "
                "VALUES ('silent', 1, 'x', '\\x00')").format(
                    sql.Identifier(schema), sql.Identifier(EVENTS_TABLE)))
        assert follower.wait_for(2, timeout=5)
    finally:
        follower.stop()
    assert seen.ids == [1, 2]


def _wait_listening(app_name: str, timeout: float = 10.0) -> None:
    """Until a connection of `app_name` has run its LISTEN (a state PostgreSQL reports)."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(BASE_URL, autocommit=True) as conn:
        while time.monotonic() < deadline:
            if conn.execute("SELECT 1 FROM pg_stat_activity WHERE application_name = %s "
                            "AND query LIKE 'LISTEN%%'", (app_name,)).fetchone():
                return
            time.sleep(0.02)  # polling the server's own report, with a deadline
    raise AssertionError(f"{app_name} never listened within {timeout}s")


def _session_started(name: str) -> SessionStarted:
    return SessionStarted(SessionId(name), 1, timestamp=EPOCH, session_id=None, name=name)


def test_a_follower_whose_listening_connection_is_killed_resubscribes_and_misses_nothing(
    pg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_name = f"follower-{postgres_options(pg)['schema']}"
    monkeypatch.setenv("PGAPPNAME", app_name)  # libpq labels this store's connections
    store = open_event_store(pg)
    seen = Collected()
    follower = PgFollower(store, seen, resync_seconds=NEVER).start()
    try:
        # With no resync, an append made before the LISTEN is in place would be seen by
        # nobody (the gap the resync covers in production): append once it listens.
        _wait_listening(app_name)
        store.append([_session_started("before")])
        assert follower.wait_for(1, timeout=10)
        with psycopg.connect(BASE_URL, autocommit=True) as conn:
            killed = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s AND query LIKE 'LISTEN%%'", (app_name,)).fetchall()
        assert killed == [(True,)]
        store.append([_session_started("after")])
        assert follower.wait_for(2, timeout=10)
    finally:
        follower.stop()
        store.close()
    assert seen.ids == [1, 2] and follower.errors >= 1


def test_a_read_model_that_never_pulls_sees_another_processs_claim_through_follow(
    pg: str,
) -> None:
    writer = open_runtime(pg)
    _, (first, second) = writer.ledger.create_plan(
        "p", "Plan", steps=[NewStep("first"), NewStep("second")], actor=OPERATOR)
    store = open_event_store(pg)
    model = ReadModel(store, SystemClock(), pull_on_read=False, tail=PgFollower)
    follower = follow(model)
    try:
        assert isinstance(follower, PgFollower)
        assert follower.wait_for(store.recorder.max_notification_id() or 0, timeout=10)
        assert model.ready(PlanSlug("p")) == [first, second]
        session = writer.ledger.start_session("other replica")
        writer.ledger.claim(first, session.id)
        assert follower.wait_for(store.recorder.max_notification_id() or 0, timeout=5)
        assert model.ready(PlanSlug("p")) == [second]
    finally:
        follower.stop()
        store.close()
        writer.close()
