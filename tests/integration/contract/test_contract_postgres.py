"""The ledger contract on PostgreSQL: a fresh schema per test, dropped afterwards."""

from collections.abc import Iterator

import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.store import WouldWait
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

    def test_an_event_loop_never_runs_a_command_itself(self, rt: Runtime) -> None:
        """Every PostgreSQL command waits on the network: `without_waiting` refuses before
        the command starts, so an HTTP route hands it to the thread pool."""
        with pytest.raises(WouldWait), rt.store.without_waiting():
            rt.ledger.start_session("a")
        assert rt.store.recorder.max_notification_id() in (None, 0)
