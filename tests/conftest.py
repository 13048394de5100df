import os
from collections.abc import Iterator
from pathlib import Path

# pytest-xdist's workers export COLUMNS=80 and LINES=24, and the command line fits its
# tables to COLUMNS (api.cli.output): a test that sets none would print to an 80-column
# terminal instead of the pipe it reads.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

import pytest  # noqa: E402

from planledger.api.runtime import Runtime, open_runtime  # noqa: E402
from tests.support.fakes import FakeClock, SequentialIds  # noqa: E402


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


@pytest.fixture
def rt(clock: FakeClock) -> Iterator[Runtime]:
    """A ledger on the in-memory store, with an injected clock and predictable ids."""
    runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    yield runtime
    runtime.close()
