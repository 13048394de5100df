"""A read model's checkpoint is a file (`ledger.views.sqlite`) or two PostgreSQL tables that
someone other than the server may be able to write. Whatever they write there runs no code,
and is believed only when it carries a MAC under the store's secret and names this very
log; anything else is ignored with a warning saying why, and `ready` and plan progress
answer from the log as if there had been no checkpoint."""

import logging
import pickle
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from planledger.api.runtime import Runtime, open_runtime
from planledger.infra.pg_checkpoints import PG_CHECKPOINT_TABLE, PG_TRACKING_TABLE
from planledger.infra.sqlite_checkpoints import CHECKPOINT_TABLE, checkpoint_path
from planledger.ledger.domain.ids import PlanSlug
from planledger.ledger.storage import postgres_options
from planledger.projections.readmodel import ReadModel
from planledger.projections.resume import (
    MAGIC,
    binding_at,
    checkpoint_key,
    restored_view,
    saved_state,
    state_data,
    tip_at,
)
from tests.integration.test_projection_rebuild import answers, random_workload
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.postgres import BASE_URL, fresh_schema

SECRET = b"the store's secret, as PLANLEDGER_SECRET gives it"
OTHER_SECRET = b"some other store's secret, just as long and good"
LOGGER = "planledger.checkpoints"


class RunsCode:
    """Unpickled, it creates the marker file: what a hostile checkpoint would do instead."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (Path.touch, (self.marker,))


@dataclass
class Store:
    """A log with checkpoints, on one backend, and raw access to its saved checkpoint."""

    db: str
    read: Callable[[], tuple[int, bytes]]
    write: Callable[[int, bytes], None]

    def open(self, clock: FakeClock, secret: bytes = SECRET) -> Runtime:
        return open_runtime(self.db, clock=clock, ids=SequentialIds(), checkpoints=True,
                            secret=secret)


def sqlite_store(db: str) -> Store:
    def read() -> tuple[int, bytes]:
        with sqlite3.connect(checkpoint_path(db)) as conn:
            position, state = conn.execute(
                f"SELECT notification_id, state FROM {CHECKPOINT_TABLE}").fetchone()
        return int(position), bytes(state)

    def write(position: int, state: bytes) -> None:
        with sqlite3.connect(checkpoint_path(db)) as conn:
            conn.execute(f"UPDATE {CHECKPOINT_TABLE} SET notification_id = ?, state = ?",
                         (position, state))
            conn.execute("UPDATE tracking SET notification_id = ?", (position,))

    return Store(db, read, write)


def postgres_store(db: str) -> Store:
    schema = sql.Identifier(postgres_options(db)["schema"])
    table, tracking = sql.Identifier(PG_CHECKPOINT_TABLE), sql.Identifier(PG_TRACKING_TABLE)

    def read() -> tuple[int, bytes]:
        with psycopg.connect(BASE_URL) as conn:
            found = conn.execute(sql.SQL("SELECT notification_id, state FROM {}.{}").format(
                schema, table)).fetchone()
        assert found is not None
        return int(found[0]), bytes(found[1])

    def write(position: int, state: bytes) -> None:
        with psycopg.connect(BASE_URL) as conn:
            conn.execute(sql.SQL("UPDATE {}.{} SET notification_id = %s, state = %s").format(
                schema, table), (position, state))
            conn.execute(sql.SQL("UPDATE {}.{} SET notification_id = %s").format(
                schema, tracking), (position,))

    return Store(db, read, write)


@contextmanager
def a_store(backend: str, directory: Path) -> Iterator[Store]:
    if backend == "sqlite":
        yield sqlite_store(str(directory / "ledger.sqlite"))
    else:
        with fresh_schema() as url:
            yield postgres_store(url)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    """A store whose server ran a workload and shut down, saving its checkpoint."""
    with a_store(request.param, tmp_path / "log") as made:
        server = made.open(clock)
        random_workload(server, clock, seed=61, commands=150)
        server.reads.catch_up()
        server.close(checkpoint=True)
        yield made


def assert_answers_from_the_log(rt: Runtime, clock: FakeClock) -> None:
    """`ready`, progress and the rest read the same as a fold of the whole log."""
    folded = ReadModel(rt.store, clock)
    folded.catch_up()
    assert answers(rt.reads) == answers(folded)
    assert rt.reads.facts() == folded.facts()
    plan = PlanSlug(rt.reads.plan_slugs()[0])
    assert rt.reads.ready_ids(plan) == folded.ready_ids(plan)
    assert rt.reads.progress(plan) == folded.progress(plan)


def reopened_ignoring(store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture,
                      reason: str, secret: bytes = SECRET) -> None:
    """Open the store again: its checkpoint is ignored, one warning says `reason`, and the
    read model answers from the log."""
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        rt = store.open(clock, secret)
        try:
            assert rt.reads.resumed_from == 0
            assert_answers_from_the_log(rt, clock)
        finally:
            rt.close()
    warnings = [r for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "folded from the start" in warnings[0].getMessage()
    assert reason in warnings[0].getMessage()


def test_an_untouched_checkpoint_is_resumed_from(store: Store, clock: FakeClock,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    position, _ = store.read()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        rt = store.open(clock)
        try:
            assert rt.reads.resumed_from == position
            assert_answers_from_the_log(rt, clock)
        finally:
            rt.close()
    assert not [r for r in caplog.records if r.name == LOGGER]


def test_a_checkpoint_with_a_flipped_byte_in_its_state_is_ignored_and_the_log_folded(
    store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    position, saved = store.read()
    at = len(saved) - 100  # inside the state, past the header
    store.write(position, saved[:at] + bytes([saved[at] ^ 1]) + saved[at + 1:])
    reopened_ignoring(store, clock, caplog, "MAC does not match")


def test_a_pickle_in_place_of_the_checkpoint_is_never_unpickled(
    store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    armed, marker = tmp_path / "the payload works", tmp_path / "code ran"
    pickle.loads(pickle.dumps(RunsCode(armed)))
    assert armed.exists()  # the payload does run code when unpickled
    position, _ = store.read()
    rt = store.open(clock)
    tip = tip_at(rt.store, position)
    rt.close()
    assert tip is not None
    # What the previous version saved and unpickled: the tip's fingerprint, then a pickle.
    store.write(position, tip.encode() + b"\n" + pickle.dumps(RunsCode(marker)))
    reopened_ignoring(store, clock, caplog, "not in this version's format")
    assert not marker.exists()


def test_a_pickle_behind_this_versions_header_is_never_unpickled(
    store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    marker = tmp_path / "code ran"
    position, saved = store.read()
    header_end = saved.index(b"\n", len(MAGIC) + 32) + 1
    store.write(position, saved[:header_end] + pickle.dumps(RunsCode(marker)))
    reopened_ignoring(store, clock, caplog, "MAC does not match")
    assert not marker.exists()


def test_a_checkpoint_read_under_another_secret_is_ignored(
    store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    reopened_ignoring(store, clock, caplog, "MAC does not match", secret=OTHER_SECRET)


def test_a_checkpoint_moved_to_another_position_is_ignored(
    store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    position, saved = store.read()
    store.write(position - 1, saved)
    reopened_ignoring(store, clock, caplog, f"at position {position}, not")


def test_a_checkpoint_of_another_log_under_the_same_secret_is_ignored(
    store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """Replicas of different logs may share a secret: a checkpoint names its own log."""
    with a_store("postgres" if store.db.startswith("postgresql") else "sqlite",
                 tmp_path / "another") as another:
        other = another.open(clock)
        random_workload(other, clock, seed=62, commands=250)  # as long, or longer
        other.reads.catch_up()
        other.close(checkpoint=True)
        store.write(*another.read())
        reopened_ignoring(store, clock, caplog, "taken of another log")


def resealed(store: Store, clock: FakeClock, key: bytes, *, state: object = None,
             **binding: object) -> tuple[int, bytes]:
    """The store's checkpoint made again under `key`, with its state's data or binding
    changed: what only a holder of the key could write."""
    position, saved = store.read()
    rt = store.open(clock)
    try:
        found = restored_view(rt.store, position, saved, checkpoint_key(SECRET))
        bound = binding_at(rt.store, position)
    finally:
        rt.close()
    assert bound is not None
    data = state_data(found) if state is None else state
    return position, saved_state(data, replace(bound, **binding), key)  # type: ignore[arg-type]


def test_a_checkpoint_tagged_under_the_raw_secret_is_ignored(
    store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The tag's key is derived from the secret for checkpoints alone: a tag made with the
    secret itself (as a session token is) is not one."""
    store.write(*resealed(store, clock, SECRET))
    reopened_ignoring(store, clock, caplog, "MAC does not match")


def test_a_tagged_checkpoint_whose_state_does_not_decode_is_ignored(
    store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store.write(*resealed(store, clock, checkpoint_key(SECRET),
                          state={"position": [[1, 2]], "steps": "everything"}))
    reopened_ignoring(store, clock, caplog, "does not decode")


def test_a_tagged_checkpoint_of_a_state_of_another_shape_is_ignored(
    store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A version whose states have other fields saved it: never half read."""
    store.write(*resealed(store, clock, checkpoint_key(SECRET), shape="0" * 64))
    reopened_ignoring(store, clock, caplog, "another shape")


def test_postgresql_without_a_secret_keeps_no_checkpoints_and_answers_from_the_log(
    clock: FakeClock, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PLANLEDGER_SECRET", raising=False)
    with fresh_schema() as url:
        rt = open_runtime(url, clock=clock, ids=SequentialIds(), checkpoints=True)
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            random_workload(rt, clock, seed=63, commands=60)
            assert_answers_from_the_log(rt, clock)
            assert not rt.reads.checkpoint()
        rt.close(checkpoint=True)
        assert "checkpoints are not used: PLANLEDGER_SECRET is required" in caplog.text
        with pytest.raises(AssertionError):
            postgres_store(url).read()  # nothing was saved


def test_a_tracked_position_past_the_log_is_dropped_and_saving_starts_again(
    store: Store, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    _, saved = store.read()
    store.write(4_000_000_000_000_000_000, saved)  # every later save would be refused
    reopened_ignoring(store, clock, caplog, "ignored")
    server = open_runtime(store.db, clock=clock, ids=SequentialIds(start=clock.now()),
                          checkpoints=True, secret=SECRET)  # ids after the first run's
    random_workload(server, clock, seed=62, commands=20)
    server.reads.catch_up()
    end = server.store.last_position()
    server.close(checkpoint=True)
    assert store.read()[0] == end  # saving works again
    again = store.open(clock)
    try:
        assert again.reads.resumed_from == end
    finally:
        again.close()
