import os
from collections.abc import Iterator
from pathlib import Path

# pytest-xdist's workers export COLUMNS=80 and LINES=24, and rich fixes a console's width
# from COLUMNS when the console is made (the CLI's are made at import): the command-line
# tests' own COLUMNS would then be ignored and their tables wrapped at 80 columns.
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
