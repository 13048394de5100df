"""The ledger contract on PostgreSQL: a fresh schema per test, dropped afterwards."""

from collections.abc import Iterator

import pytest

from api.runtime import Runtime, open_runtime
from tests.integration.contract.ledger_contract import LedgerContract
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.postgres import fresh_schema


class TestPostgresLedger(LedgerContract):
    @pytest.fixture(autouse=True)
    def _schema(self) -> Iterator[None]:
        with fresh_schema() as url:
            self.url = url
            yield

    def make_runtime(self, clock: FakeClock) -> Runtime:
        return open_runtime(self.url, clock=clock, ids=SequentialIds())
