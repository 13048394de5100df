"""The ledger contract on the embedded backends: in-memory and an SQLite file."""

from pathlib import Path

import pytest

from planledger.api.runtime import Runtime, open_runtime
from tests.integration.contract.ledger_contract import LedgerContract
from tests.support.fakes import FakeClock, SequentialIds


class TestMemoryLedger(LedgerContract):
    def make_runtime(self, clock: FakeClock) -> Runtime:
        return open_runtime("memory", clock=clock, ids=SequentialIds())


class TestSQLiteLedger(LedgerContract):
    @pytest.fixture(autouse=True)
    def _tmp(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path

    def make_runtime(self, clock: FakeClock) -> Runtime:
        return open_runtime(str(self.tmp_path / "ledger.sqlite"), clock=clock, ids=SequentialIds())
