from collections.abc import Iterator
from pathlib import Path

import pytest

from api.runtime import Runtime, open_runtime
from tests.support.fakes import FakeClock, SequentialIds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["memory", "sqlite"])
def runtime(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Runtime]:
    """A ledger on each embedded backend, with an injected clock and predictable ids."""
    db = "memory" if request.param == "memory" else str(tmp_path / "ledger.sqlite")
    rt = open_runtime(db, clock=clock, ids=SequentialIds())
    yield rt
    rt.close()
