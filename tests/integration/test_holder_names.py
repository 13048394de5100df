"""A held step names its holder's session (`holder_name`) wherever a step is answered;
a holder with no name leaves the field out rather than sending null."""

from planledger.api.client import connect
from planledger.api.schemas import PlanIn


def test_a_held_step_names_its_holder_and_an_unnamed_one_leaves_it_out() -> None:
    with connect(None, db="memory") as client:
        client.create_plan(PlanIn.model_validate(
            {"slug": "p", "title": "P", "steps": [{"title": "one"}, {"title": "two"}]}))
        first, second = (s.step_id for s in client.ready("p").ready)
        named = client.start_session("agent B")
        client.claim(first)
        client.actor = None
        client.start_session()  # unnamed
        client.claim(second)
        held = {s.step_id: s for s in client.plan("p").steps}
        assert held[first].holder == named.session_id
        assert held[first].holder_name == "agent B"
        assert held[second].holder_name is None
        assert "holder_name" not in held[second].model_dump(mode="json")
        assert client.step(first).model_dump(mode="json")["holder_name"] == "agent B"
