"""The checkpoint's data format: typed values to JSON and back, exactly, and nothing else."""

import json
from array import array
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Literal, NewType, get_type_hints

import pytest

from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.state import PlanState, SessionState, StepDef, StepState
from planledger.projections.codec import CodecError, codec_for, record_of
from planledger.projections.index import PlanIndex
from planledger.projections.resume import STATE
from planledger.projections.view import TIMELESS, LedgerView, Positions

WHEN = datetime(2025, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


def through_json(kind: Any, value: Any) -> Any:
    """`value` encoded, written as JSON text, read back and decoded, as a checkpoint is."""
    codec = codec_for(kind)
    return codec.decode(json.loads(json.dumps(codec.encode(value))))


def a_view() -> LedgerView:
    """A view with something in every table, built by hand (no log needed)."""
    view = LedgerView()
    step, other = StepId("01STEP"), StepId("01OTHER")
    plan = PlanSlug("auth-refresh")
    view.position, view.last_time = 42, WHEN
    definition = StepDef(id=step, position=0, title="Rotate keys", body="body\nwith ünïcode",
                         depends_on=(other,), added_at=WHEN)
    view.plans[plan] = PlanState(id="plan:auth-refresh", version=3, slug=plan, title="Auth",
                                 constraints={"no-mem": "why"}, created_at=WHEN,
                                 steps={step: definition})
    view.steps[step] = StepState(
        id=step, version=4, plan=plan, status="in_progress", holder=SessionId("01AGENT"),
        fence=2, expires_at=WHEN + timedelta(seconds=900), lease_seconds=900)
    view.steps[other] = StepState(id=other, version=1, plan=plan)
    view.sessions[SessionId("01AGENT")] = SessionState(
        id=SessionId("01AGENT"), version=1, name=None, started_at=WHEN)
    index = PlanIndex(plan)
    index.add(step, WHEN)
    index.add(other, WHEN - timedelta(seconds=1))
    index.place(step, "in_progress")
    index.place(other, "ready")
    index.hold_until(step, WHEN + timedelta(seconds=900))
    index.hold_until(other, TIMELESS)
    view.indexes[plan] = index
    view.dependents[other] = {step}
    view.held[SessionId("01AGENT")] = {step}
    view.ended_holders.add(SessionId("01GONE"))
    view.history[step] = array("q", [3, 9, 42])
    view.history[other] = array("q")
    view.plan_marks[plan] = array("q", [1])
    view.session_marks.extend([2, 5])
    return view


def test_a_view_read_back_from_its_checkpoint_data_holds_exactly_what_was_saved() -> None:
    saved = a_view()
    restored = STATE.decode(json.loads(json.dumps(STATE.encode(saved))))
    assert isinstance(restored, LedgerView)
    assert restored.facts() == saved.facts()
    step = restored.steps[StepId("01STEP")]
    assert type(step) is StepState and step.expires_at is not None
    assert step.expires_at.tzinfo is UTC  # the very same kind of datetime, not a look-alike
    assert type(restored.plans[PlanSlug("auth-refresh")].steps[StepId("01STEP")].depends_on) \
        is tuple
    assert type(restored.history[StepId("01STEP")]) is array
    assert restored.history[StepId("01STEP")].typecode == "q"
    assert type(restored.dependents[StepId("01OTHER")]) is set
    index = restored.indexes[PlanSlug("auth-refresh")]
    assert index.by_expiry[0] == (TIMELESS, StepId("01OTHER"))
    assert type(index.keys[StepId("01STEP")]) is tuple


def test_a_restored_view_folds_on_like_the_one_it_was_saved_from() -> None:
    restored = STATE.decode(json.loads(json.dumps(STATE.encode(a_view()))))
    restored.settle()  # its dispatch table and dirty set are rebuilt, not saved
    assert restored.verdict(StepId("01STEP"), WHEN).kind == a_view().verdict(
        StepId("01STEP"), WHEN).kind


def test_every_attribute_a_view_holds_is_saved_in_its_checkpoint() -> None:
    """An attribute added to LedgerView without its annotation would be lost on restore."""
    public = {name for name in vars(LedgerView()) if not name.startswith("_")}
    assert public == set(get_type_hints(LedgerView)) == set(STATE.attributes)


@dataclass(frozen=True)
class LaterStepState:
    """A state as another engineer may grow it: one field more than the codec was told."""

    id: StepId
    status: Literal["open", "done"] = "open"
    actor: str | None = None
    tags: frozenset[str] = field(default_factory=frozenset)


def test_a_field_added_to_a_state_is_saved_and_checked_without_being_listed() -> None:
    states = [LaterStepState(StepId("a"), "done", "local:ann", frozenset({"x"})),
              LaterStepState(StepId("b"))]
    assert through_json(list[LaterStepState], states) == states
    with pytest.raises(CodecError, match=r"state\.actor: expected str"):
        codec_for(LaterStepState).decode(
            {"id": ["a"], "status": ["open"], "actor": [7], "tags": [[0], []]}, "state")


def shape_of_a_step_state(*, with_actor: bool) -> str:
    if with_actor:
        @dataclass(frozen=True)
        class StepState:
            id: StepId
            actor: str | None = None
    else:
        @dataclass(frozen=True)
        class StepState:  # type: ignore[no-redef]
            id: StepId
    return record_of(StepState).description


def test_a_state_that_gained_a_field_has_another_shape() -> None:
    """So a checkpoint saved before the field existed is ignored, never half read."""
    assert shape_of_a_step_state(with_actor=True) != shape_of_a_step_state(with_actor=False)


Session = NewType("Session", str)


@pytest.mark.parametrize(("kind", "value"), [
    (dict[Session, set[int]], {Session("a"): {1, 2}, Session("b"): set()}),
    (list[tuple[datetime, str]], [(TIMELESS, "x"), (WHEN, "y")]),
    (tuple[str, ...], ()),
    (dict[str, datetime | None], {"naive": datetime(2020, 1, 1), "none": None}),
    (list[datetime], [datetime(2020, 1, 1, tzinfo=timezone(timedelta(hours=-5)))]),
    (list[Positions], [array("q", [2**63 - 1, -(2**63)]), array("q")]),
    (dict[str, bool], {"yes": True, "no": False}),
    (list[Session | None], [Session("local:ann"), None, Session("01AGENT")]),
])
def test_values_of_every_kind_the_view_keeps_come_back_equal(kind: Any, value: Any) -> None:
    assert through_json(kind, value) == value


NO_NOTES = [[0], {"by": [], "at": [], "text": [], "after": []}]  # one step, no notes


@pytest.mark.parametrize(("kind", "data", "where"), [
    (StepState, {"id": ["s"], "version": [1], "plan": ["p"], "status": ["sleeping"],
                 "holder": [None], "fence": [0], "expires_at": [None],
                 "lease_seconds": [0], "notes": NO_NOTES, "author": [None]}, "status"),
    (StepState, {"id": ["s"], "version": [True], "plan": ["p"], "status": ["open"],
                 "holder": [None], "fence": [0], "expires_at": [None],
                 "lease_seconds": [0], "notes": NO_NOTES, "author": [None]}, "version"),
    (StepState, {"id": ["s"], "version": [1], "plan": ["p"], "status": ["open"],
                 "holder": [None], "fence": [0], "expires_at": ["yesterday"],
                 "lease_seconds": [0], "notes": NO_NOTES, "author": [None]}, "expires_at"),
    (StepState, {"id": ["s"], "version": [1]}, "expected the attributes"),
    (StepState, {"id": ["s"], "version": [1, 2], "plan": ["p"], "status": ["open"],
                 "holder": [None], "fence": [0], "expires_at": [None],
                 "lease_seconds": [0], "notes": NO_NOTES, "author": [None]}, "different lengths"),
    (set[str], [[2], ["a", "a"]], "repeated"),
    (dict[str, int], [[2], ["k", "k"], [1, 2]], "repeated key"),
    (list[str], [[3], ["a"]], "add up"),
    (list[str], [[-1], []], "negative"),
    (array, [[1], [1.5]], "float"),
    (array, [[1], [2**63]], "state"),
    (tuple[str, int], [["a"], ["b"]], r"\[1\]"),
    (str, {"__reduce__": "os.system"}, "expected a list"),
])
def test_data_that_is_not_of_the_annotated_type_is_refused_naming_where(
    kind: Any, data: Any, where: str
) -> None:
    with pytest.raises(CodecError, match=where):
        codec_for(kind).decode_many(data, "state")


def test_a_type_the_codec_cannot_keep_is_refused_when_the_codec_is_built() -> None:
    with pytest.raises(TypeError, match="no codec"):
        codec_for(dict[str, object])
