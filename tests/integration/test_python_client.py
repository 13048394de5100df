"""`from planledger import Client`: the same operations, the same answers, on the embedded
store and on a server over a real socket; a client without a session acts for the one it
starts. `Client` is the class both transports are, documented; a `with` block ends the
sessions it started (not those it was handed); `plan=` everywhere, `slug=` deprecated."""

import inspect
import pydoc
from collections.abc import Iterator
from pathlib import Path

import pytest

from planledger.api.runtime import open_runtime
from planledger.api.schemas import PlanIn, PlanStepIn, SessionStartOut
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


def _attach(where: dict[str, str], started: SessionStartOut) -> dict[str, str]:
    """Where to reach, acting for a session started elsewhere: by its token on a server,
    by its id on the embedded store."""
    if "url" in where:
        return {**where, "token": str(started.token)}
    return {**where, "session": started.session_id}


def test_client_is_the_class_both_transports_are(where: dict[str, str]) -> None:
    from planledger import Client
    from planledger.api.client import LocalClient, RemoteClient

    with Client(**where) as ledger:
        assert isinstance(ledger, Client)
        assert isinstance(ledger, RemoteClient if "url" in where else LocalClient)


def test_help_on_client_lists_its_documented_methods() -> None:
    from planledger import Client

    text = pydoc.render_doc(Client, renderer=pydoc.plaintext)

    assert "class Client" in text and "Used as a context manager" in text
    for method in ("start_session", "end_session", "create_plan", "ready", "claim",
                   "claim_next", "heartbeat", "complete", "release", "drop", "add_note",
                   "step", "timeline", "close"):
        assert f"{method}(self" in text, method
    assert "Claim the plan's next step" in text
    missing = [name for name, member in inspect.getmembers(Client, inspect.isfunction)
               if not name.startswith("_") and not member.__doc__]
    assert missing == []


def test_a_block_ends_the_sessions_it_started_and_keeps_those_it_was_handed(
    where: dict[str, str],
) -> None:
    from planledger import Client

    with Client(**where) as setup:  # plans are made as a session the block then ends
        setup.create_plan(PLAN)
    handed = Client(**where)
    kept = handed.start_session("kept")
    handed.close()  # close alone ends nothing
    with Client(**_attach(where, kept)) as ledger:
        claimed = ledger.claim_next(plan="scripted").claimed
        assert claimed is not None and claimed.holder == kept.session_id
        second = ledger.start_session("helper")  # started here: ended with the block
    with Client(**where) as ledger:
        me = ledger.start_session("script")
        assert ledger.claim_next(plan="scripted").claimed is None  # only one is ready

    with Client(**where) as reader:
        assert reader.session(kept.session_id).ended is False
        assert reader.session(kept.session_id).holds != []
        assert reader.session(second.session_id).ended is True
        assert reader.session(me.session_id).ended is True


def test_a_block_that_raises_still_ends_its_session_and_raises_its_own_error(
    where: dict[str, str],
) -> None:
    from planledger import Client

    with pytest.raises(LookupError, match="the script's own"), Client(**where) as ledger:
        me = ledger.start_session("script")
        ledger.create_plan(PLAN)
        assert ledger.claim_next(plan="scripted").claimed is not None
        raise LookupError("the script's own")

    with Client(**where) as reader:
        assert reader.session(me.session_id).ended is True
        assert reader.ready("scripted").ready != []  # its claim was released


def test_a_session_ended_in_the_block_is_not_ended_again(where: dict[str, str]) -> None:
    from planledger import Client

    with Client(**where) as ledger:
        me = ledger.start_session("script")
        assert ledger.end_session().session_id == me.session_id

    with Client(**where) as reader:
        assert reader.session(me.session_id).ended is True


def test_claim_next_takes_plan_and_slug_still_works_with_a_warning(
    where: dict[str, str],
) -> None:
    from planledger import Client

    with Client(**where) as ledger:
        ledger.start_session("script")
        ledger.create_plan(PLAN)
        assert [s.title for s in ledger.ready(plan="scripted").ready] == ["first"]
        with pytest.warns(DeprecationWarning, match=r"claim_next\(slug=\.\.\.\) is "
                                                    r"deprecated: pass plan="):
            claimed = ledger.claim_next(slug="scripted").claimed
        assert claimed is not None and claimed.title == "first"
        with pytest.warns(DeprecationWarning, match="ready"):
            assert ledger.ready(slug="scripted").ready == []
        with pytest.raises(TypeError, match="plan= or slug=, not both"):
            ledger.claim_next("scripted", slug="scripted")
        with pytest.raises(TypeError, match="needs the plan"):
            ledger.claim_next()
