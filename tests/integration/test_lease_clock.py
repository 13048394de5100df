"""One clock for leases: a lease is granted and judged lapsed on the same clock, whichever
process or replica does either, and that clock never runs backwards.

On PostgreSQL it is the database server's (replicas whose own clocks are minutes apart
agree on every lease, checked against the time the database recorded each event at); on
SQLite the machine's, held from running backwards and never before the log's newest event;
and a command that retries after a conflict decides again at a fresh time."""

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from planledger.api.runtime import Runtime, open_runtime
from planledger.infra.clock_ids import DatabaseClock, SteadyClock, SystemClock
from planledger.infra.pg_schema import EVENTS_TABLE
from planledger.ledger.application import NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.ledger.ports import Clock
from planledger.ledger.storage import postgres_conninfo, postgres_options
from tests.support import OPERATOR
from tests.support.fakes import EPOCH, FakeClock, SequentialIds
from tests.support.postgres import fresh_schema


class SkewedClock(Clock):
    """This machine's clock, off by `offset` (a replica whose NTP is broken)."""

    def __init__(self, offset: timedelta) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return SystemClock().now() + self.offset


class TickingClock(FakeClock):
    """A fake clock that moves on by `tick` seconds each time it is read."""

    tick = 0.0

    def now(self) -> datetime:
        return self.advance(self.tick)


def _plan(rt: Runtime, steps: int = 1) -> list[StepId]:
    _, ids = rt.ledger.create_plan(
        "p", "Plan", steps=[NewStep(key=f"s{i}", title=f"step {i}") for i in range(steps)],
        actor=OPERATOR)
    return list(ids)


# --- PostgreSQL: the database's clock ------------------------------------------------


def _connect(url: str, *, autocommit: bool = False) -> psycopg.Connection[tuple[Any, ...]]:
    info = postgres_conninfo(url)
    return psycopg.connect(make_conninfo(**info), autocommit=autocommit)


@pytest.fixture
def pg_url() -> Iterator[str]:
    with fresh_schema(pool_size=8, max_overflow=8) as url:
        yield url


def _record_insert_times(url: str) -> None:
    """Have the database stamp each event with its own clock as it is inserted: the
    yardstick the replicas' decisions are checked against."""
    schema = postgres_options(url)["schema"]
    with _connect(url, autocommit=True) as conn:
        conn.execute(f'ALTER TABLE "{schema}".{EVENTS_TABLE} ADD COLUMN recorded_at '
                     "timestamptz NOT NULL DEFAULT clock_timestamp()")


@dataclass
class Hold:
    holder: str
    expires_at: datetime  # by the clock its lease was decided on


# How long before its insert a decision may have been made: an attempt's read, decision and
# append, however slow the machine (a replica deciding on its own clock, minutes off, is
# minutes off).
DECIDED_BEFORE_INSERT = timedelta(seconds=60)
INSERT_CLOCK_RESOLUTION = timedelta(milliseconds=50)  # the two readings of one clock


def _overlapping_holds(url: str) -> list[str]:
    """Every event decided on another clock than the database's, and every grant of a step
    to a session while another's lease was still live. The yardstick is the time the
    database inserted each event at: a decision (the event's timestamp) comes before its
    insert, and not minutes before. Once every decision is known to be on the database's
    clock, leases are judged on it: a grant decided before the holder's lease ended (its
    `expires_at`, renewals included) overlapped it. Nothing here depends on how busy the
    machine was: a slow append only widens the gap the first check allows."""
    schema = postgres_options(url)["schema"]
    with _connect(url) as conn:
        rows = conn.execute(
            f'SELECT notification_id, recorded_at FROM "{schema}".{EVENTS_TABLE}').fetchall()
    recorded = {int(n): at for n, at in rows}
    runtime = open_runtime(url, clock=FakeClock())
    try:
        notes = runtime.store.recorder.select_notifications(start=1, limit=1_000_000)
        events = [(runtime.store.mapper.to_domain_event(n), recorded[n.id]) for n in notes]
    finally:
        runtime.close()
    holds: dict[str, Hold | None] = {}
    found = []
    for event, at in events:
        decided = event.timestamp
        if not at - DECIDED_BEFORE_INSERT < decided <= at + INSERT_CLOCK_RESOLUTION:
            found.append(f"{type(event).__name__} decided at {decided}, inserted at {at}")
        step = event.originator_id
        held = holds.get(step)
        if isinstance(event, ev.StepClaimed):
            if held is not None and held.holder != event.session_id \
                    and decided < held.expires_at:
                found.append(f"{step}: {event.session_id} granted at {decided} while "
                             f"{held.holder} held it until {held.expires_at}")
            assert event.session_id is not None
            holds[step] = Hold(event.session_id, event.expires_at)
        elif isinstance(event, ev.LeaseRenewed) and held is not None:
            held.expires_at = event.expires_at
        elif isinstance(event, ev.StepReleased | ev.StepCompleted | ev.StepDropped):
            holds[step] = None
    return found


LEASE_SECONDS = 2
SKEWS = (timedelta(minutes=-3), timedelta(minutes=3), timedelta(0))


def _agent(replica: Runtime, session: str, steps: list[StepId], until: float) -> int:
    """Claims a step whenever it can, heartbeats it once, then lets it lapse."""
    grants = 0
    while time.monotonic() < until:
        for step in steps:
            try:
                replica.ledger.claim(step, session, lease_seconds=LEASE_SECONDS)
            except errors.AlreadyClaimed:
                continue
            grants += 1
            time.sleep(0.3)  # working on it
            with contextlib.suppress(errors.NotHolder):
                replica.ledger.heartbeat(step, session, lease_seconds=LEASE_SECONDS)
        time.sleep(0.05)
    return grants


def test_replicas_whose_clocks_are_minutes_apart_never_grant_a_live_lease_again(
    pg_url: str,
) -> None:
    _record_insert_times(pg_url)
    replicas = [open_runtime(pg_url, wall=SkewedClock(skew)) for skew in SKEWS]
    try:
        steps = _plan(replicas[0], steps=2)
        sessions = [replicas[i % 3].ledger.start_session(f"agent-{i}").id for i in range(6)]
        until = time.monotonic() + 3 * LEASE_SECONDS + 1
        grants: list[int] = []
        threads = [threading.Thread(target=lambda i=i: grants.append(
            _agent(replicas[i % 3], sessions[i], steps, until))) for i in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        for replica in replicas:
            replica.close()
    overlapping = _overlapping_holds(pg_url)
    print(f"clock skew: 3 replicas at -3 min, +3 min and 0; {sum(grants)} grants of "
          f"{LEASE_SECONDS} s leases; {len(overlapping)} granted while another's was live")
    assert sum(grants) >= 4  # leases lapsed and were taken over, on every replica's word
    assert overlapping == []


def test_a_replica_reads_the_database_clock_within_a_round_trip(pg_url: str) -> None:
    replica = open_runtime(pg_url, wall=SkewedClock(timedelta(minutes=-7)))
    try:
        with _connect(pg_url) as conn:
            for _ in range(20):
                before = conn.execute("SELECT clock_timestamp()").fetchone()
                decided = replica.ledger.clock.now()
                after = conn.execute("SELECT clock_timestamp()").fetchone()
                assert before is not None and after is not None
                assert before[0] - timedelta(milliseconds=50) <= decided
                assert decided <= after[0] + timedelta(milliseconds=50)
    finally:
        replica.close()


def test_the_database_clock_goes_on_from_its_last_reading_when_the_database_is_down() -> None:
    readings = iter([EPOCH])
    elapsed = [100.0]

    def read() -> datetime:
        moment = next(readings, None)
        if moment is None:
            raise psycopg.OperationalError("connection refused")
        return moment

    clock = DatabaseClock(read, fallback=FakeClock(EPOCH - timedelta(hours=1)),
                          elapsed=lambda: elapsed[0])
    assert clock.now() == EPOCH
    elapsed[0] += 5  # past the next reading, which fails
    assert clock.now() == EPOCH + timedelta(seconds=5)


def test_a_retry_after_a_conflict_decides_at_a_fresh_now(pg_url: str) -> None:
    clock = TickingClock()
    deciding = open_runtime(pg_url, clock=clock, ids=SequentialIds())
    other = open_runtime(pg_url, clock=FakeClock(EPOCH + timedelta(seconds=30)))
    try:
        (step,) = _plan(deciding)
        holder = deciding.ledger.start_session("holder")
        taker = deciding.ledger.start_session("taker")
        deciding.ledger.claim(step, holder.id, lease_seconds=60)  # until EPOCH+60 ...
        other.ledger.claim(step, holder.id, lease_seconds=60)  # ... renewed elsewhere: +90
        # The taker's first try decides on the step as this replica last knew it (lapsed
        # at +89) and conflicts with the renewal; its retry reads the step again and must
        # judge it at a fresh time (+91: lapsed again), not at the first try's +89.
        clock.set(EPOCH + timedelta(seconds=87))
        clock.tick = 2
        grant = deciding.ledger.claim(step, taker.id, lease_seconds=60)
    finally:
        deciding.close()
        other.close()
    assert (grant.fence, grant.took_over_from) == (2, holder.id)
    assert grant.expires_at == EPOCH + timedelta(seconds=91 + 60)


# --- SQLite: the machine's clock, steady -----------------------------------------------


def test_a_clock_stepped_back_does_not_revive_a_lapsed_lease(tmp_path: Path) -> None:
    wall = FakeClock()
    rt = open_runtime(str(tmp_path / "ledger.sqlite"), wall=wall)
    try:
        (step,) = _plan(rt)
        holder, taker = rt.ledger.start_session("holder"), rt.ledger.start_session("taker")
        rt.ledger.claim(step, holder.id, lease_seconds=60)
        wall.advance(120)  # lapsed ...
        assert list(rt.reads.ready(PlanSlug("p"))) == [step]
        wall.advance(-110)  # ... and the clock is stepped back to within the lease
        assert list(rt.reads.ready(PlanSlug("p"))) == [step]
        with pytest.raises(errors.NotHolder):
            rt.ledger.heartbeat(step, holder.id, lease_seconds=60)
        assert rt.ledger.claim(step, taker.id, lease_seconds=60).took_over_from == holder.id
    finally:
        rt.close()


def test_a_process_started_after_the_clock_was_stepped_back_judges_no_earlier_than_the_log(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "ledger.sqlite")
    wall = FakeClock()
    first = open_runtime(db, wall=wall)
    (step,) = _plan(first)
    holder = first.ledger.start_session("holder")
    first.ledger.claim(step, holder.id, lease_seconds=60)
    wall.advance(120)
    taker = first.ledger.start_session("taker")  # written after the lease lapsed
    first.close()
    wall.advance(-110)  # stepped back; a new process starts
    second = open_runtime(db, wall=wall)
    try:
        with pytest.raises(errors.NotHolder):
            second.ledger.heartbeat(step, holder.id, lease_seconds=60)
        assert second.ledger.claim(step, taker.id, lease_seconds=60).took_over_from == holder.id
    finally:
        second.close()


def test_a_steady_clock_stands_still_while_its_wall_clock_catches_up() -> None:
    wall = FakeClock()
    clock = SteadyClock(wall, floor=lambda: EPOCH + timedelta(seconds=10))
    assert clock.now() == EPOCH + timedelta(seconds=10)  # the log's newest event
    wall.advance(15)
    assert clock.now() == EPOCH + timedelta(seconds=15)
    wall.advance(-5)
    assert clock.now() == EPOCH + timedelta(seconds=15)
    wall.advance(6)
    assert clock.now() == EPOCH + timedelta(seconds=16)
