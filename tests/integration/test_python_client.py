"""`from planledger import Client`: the same operations, the same answers, on the embedded
store and on a server over a real socket; a client without a session acts for the one it
starts."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from planledger.api.runtime import open_runtime
from planledger.api.schemas import PlanIn, PlanStepIn
from tests.support.live_server import live_server

PLAN = PlanIn(slug="scripted", title="Scripted", steps=[
    PlanStepIn(key="a", title="first"), PlanStepIn(title="second", depends_on=["a"])])


@pytest.fixture(params=["embedded", "server"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    db = str(tmp_path / "ledger.sqlite")
    if request.param == "embedded":
        yield {"db": db}
        return
    runtime = open_runtime(db)
    try:
        with live_server(runtime) as server:
            yield {"url": server.url}
    finally:
        runtime.close()


def test_a_script_starts_a_session_plans_claims_and_completes(where: dict[str, str]) -> None:
    from planledger import Client

    with Client(**where) as ledger:
        me = ledger.start_session("script")
        made = ledger.create_plan(PLAN)
        first, second = (s.step_id for s in made.steps)
        claimed = ledger.claim_next("scripted", None).claimed
        assert claimed is not None
        assert (claimed.step_id, claimed.holder) == (first, me.session_id)
        ledger.complete(first, claimed.fence)
        assert [s.step_id for s in ledger.ready("scripted").ready] == [second]
        author = ledger.step(first).history[0]
        assert author.actor == me.session_id  # the plan is the script's session's
        assert ledger.plan("scripted").progress.line.startswith("1/2 done")
