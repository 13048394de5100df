"""Fixtures shared by the integration tests."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from planledger.api.runtime import Runtime, open_runtime
from tests.support.fakes import FakeClock, SequentialIds


@pytest.fixture
def db(tmp_path: Path) -> str:
    """An SQLite file for the test (tests of other stores override this fixture)."""
    return str(tmp_path / "ledger.sqlite")


@pytest.fixture
def file_runtime(db: str, clock: FakeClock) -> Iterator[Runtime]:
    """A ledger on `db` with the test's clock and predictable ids."""
    rt = open_runtime(db, clock=clock, ids=SequentialIds())
    yield rt
    rt.close()
