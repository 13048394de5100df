"""The failover harness on real PostgreSQL clusters: the standby replays what the primary
commits, refuses writes until promoted, and takes them once promoted; everything is removed
afterwards."""

import time
from collections.abc import Callable

import psycopg
import pytest

from planledger.infra.pg_schema import missing_objects
from tests.support.pg_standby import standby_pair

DEADLINE = 60.0


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():  # polling the server with a deadline: replay is asynchronous
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _rows(url: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT word FROM harness ORDER BY word").fetchall()


def _write(url: str, word: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS harness (word text)")
        conn.execute("INSERT INTO harness VALUES (%s)", (word,))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("synchronous", [True, False], ids=["synchronous", "asynchronous"])
def test_the_standby_replays_the_primary_and_takes_writes_once_promoted(
    synchronous: bool,
) -> None:
    with standby_pair(synchronous=synchronous) as pair:
        _write(pair.url, "before")  # the multi-host URL reaches the primary
        _until(pair.caught_up, "the standby to replay the write")
        assert _rows(pair.standby_url) == [("before",)]
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            _write(pair.standby_url, "refused")
        pair.kill_primary()
        pair.promote()
        _write(pair.url, "after")  # the same URL now reaches the promoted standby
        assert _rows(pair.standby_url) == [("after",), ("before",)]
        root = pair.root
    assert not root.exists()


@pytest.mark.timeout(300)
def test_the_primary_has_planledgers_schema_and_the_pair_is_removed_on_failure() -> None:
    root = None
    with pytest.raises(RuntimeError, match="the block failed"), \
            standby_pair(synchronous=True) as pair:
        root = pair.root
        assert missing_objects(pair.url) == ()
        raise RuntimeError("the block failed")
    assert root is not None and not root.exists()

