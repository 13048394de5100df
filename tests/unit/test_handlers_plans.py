"""The session and plan handlers' decisions, given plain events: start and end a session,
list ready steps, create a plan, add, revise and link steps."""

from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import SessionId, StepId, plan_stream
from planledger.ledger.domain.state import SessionState, StepDef
from tests.support import OPERATOR
from tests.support.fakes import EPOCH, SequentialIds
from tests.support.given import (
    BEFORE,
    PLAN,
    claimed,
    ended,
    given,
    plan,
    started,
    step,
)

A, B, C = StepId("A"), StepId("B"), StepId("C")
S1, S2 = SessionId("S1"), SessionId("S2")
PLAN_STREAM = plan_stream(PLAN)


def _first_ids(n: int) -> list[str]:
    """The ids a scene hands out first (its generator's, in order)."""
    ids = SequentialIds()
    return [ids.new_id() for _ in range(n)]


# --- sessions ----------------------------------------------------------------------------


def test_start_session_opens_a_stream_under_a_new_id() -> None:
    then = given().when(c.StartSession("ana"))

    [new] = _first_ids(1)
    assert then.answer == SessionState(SessionId(new), 1, "ana", EPOCH)
    assert then.kinds == ["SessionStarted"]
    assert (then.one(ev.SessionStarted).originator_id, then.one(ev.SessionStarted).actor) == (
        new, new)


def test_start_session_with_a_name_holding_control_characters_writes_nothing() -> None:
    then = given().when(c.StartSession("a\x00b"))
    assert then.refused(errors.InvalidInput).field == "name"
    assert then.events == []


def test_end_session_releases_each_held_step_as_its_own_event_then_ends() -> None:
    scene = given(started(S1), plan(), *step(A), *step(B), *step(C),
                  claimed(A, by=S1), claimed(B, by=S1), claimed(C, by=S1, expires_in=-1))
    then = scene.when(c.EndSession(S1))

    assert then.answer == c.SessionEnded(S1, (A, B))  # C's lease had lapsed: not held
    assert then.kinds == ["StepReleased", "StepReleased", "SessionEnded"]
    released = [e for e in then.events if isinstance(e, ev.StepReleased)]
    assert [(r.originator_id, r.holder, r.reason) for r in released] == [
        (A, S1, "session_ended"), (B, S1, "session_ended")]
    assert then.one(ev.SessionEnded).released == [A, B]


def test_end_session_holding_nothing_only_ends_it() -> None:
    then = given(started(S1)).when(c.EndSession(S1))
    assert then.answer == c.SessionEnded(S1, ())
    assert then.kinds == ["SessionEnded"]


def test_ending_an_ended_session_is_refused_with_no_event() -> None:
    then = given(started(S1), ended(S1)).when(c.EndSession(S1))
    assert then.refused(errors.SessionClosed).session_id == S1
    assert then.events == []


def test_list_ready_records_what_the_session_is_shown() -> None:
    scene = given(started(S1), started(S2), plan(), *step(A), *step(B, after=[A]), *step(C),
                  claimed(C, by=S2))
    then = scene.when(c.ListReady(PLAN, S1))

    assert then.answer == c.ReadyListed(PLAN, (A,), session=S1)
    listed = then.one(ev.ReadyListed)
    assert then.kinds == ["ReadyListed"]
    assert (listed.originator_id, listed.plan, listed.step_ids) == (S1, PLAN, [A])


def test_list_ready_by_an_ended_session_is_refused_with_no_event() -> None:
    then = given(started(S1), ended(S1), plan(), *step(A)).when(c.ListReady(PLAN, S1))
    assert then.refused(errors.SessionClosed).session_id == S1
    assert then.events == []


# --- plans -------------------------------------------------------------------------------


def test_create_plan_writes_the_plan_and_its_steps_in_one_append() -> None:
    command = c.CreatePlan("q", "Q", OPERATOR, (("style", "short"),),
                           (c.NewStep("first", key="one"), c.NewStep("then", depends_on=("one",))))
    then = given().when(command)

    first, second = _first_ids(2)
    made = then.answer
    assert (made.step_ids, made.keys) == ((first, second), ("one", None))
    assert (made.plan.slug, made.plan.constraints) == ("q", {"style": "short"})
    assert made.plan.steps[StepId(second)].depends_on == (first,)
    assert then.kinds == ["PlanCreated", "StepAdded", "StepOpened", "StepAdded", "StepOpened"]
    assert [e.originator_id for e in then.events] == [
        "plan:q", "plan:q", first, "plan:q", second]


def test_create_plan_with_an_existing_slug_is_refused_and_writes_nothing() -> None:
    then = given(plan()).when(c.CreatePlan(PLAN, "again", OPERATOR, steps=(c.NewStep("s"),)))
    assert then.refused(errors.PlanExists).slug == PLAN
    assert then.events == []


def test_create_plan_with_a_step_waiting_on_an_unknown_key_writes_nothing() -> None:
    command = c.CreatePlan("q", "Q", OPERATOR, steps=(c.NewStep("s", depends_on=("ghost",)),))
    then = given().when(command)
    assert then.refused(errors.UnknownDependency).unknown == ["ghost"]
    assert then.events == []


def test_create_plan_with_a_malformed_slug_writes_nothing() -> None:
    then = given().when(c.CreatePlan("Not A Slug", "Q", OPERATOR))
    assert then.refused(errors.InvalidInput).field == "slug"
    assert then.events == []


def test_add_step_appends_to_the_plan_and_opens_the_step() -> None:
    then = given(plan(), *step(A)).when(c.AddStep(PLAN, "next", OPERATOR, "why", (A,)))

    [new] = _first_ids(1)
    assert then.answer == c.StepDefined(PLAN, StepDef(StepId(new), 1, "next", "why", (A,), EPOCH))
    assert then.kinds == ["StepAdded", "StepOpened"]
    added, opened = then.one(ev.StepAdded), then.one(ev.StepOpened)
    assert (added.originator_id, added.step_id, added.depends_on) == (PLAN_STREAM, new, [A])
    assert (opened.originator_id, opened.plan, opened.actor) == (new, PLAN, OPERATOR)


def test_add_step_waiting_on_an_unknown_step_is_refused_and_writes_nothing() -> None:
    then = given(plan(), *step(A)).when(c.AddStep(PLAN, "next", OPERATOR, depends_on=(A, "Z")))
    assert then.refused(errors.UnknownDependency).unknown == ["Z"]
    assert then.events == []


def test_add_step_to_an_unknown_plan_is_refused() -> None:
    then = given().when(c.AddStep("nope", "next", OPERATOR))
    assert then.refused(errors.UnknownPlan).slug == "nope"
    assert then.events == []


def test_add_step_by_an_ended_session_is_refused() -> None:
    then = given(started(S1), ended(S1), plan()).when(c.AddStep(PLAN, "next", S1))
    assert then.refused(errors.SessionClosed).session_id == S1
    assert then.events == []


def test_revise_step_changes_only_what_it_names() -> None:
    then = given(plan(), *step(A)).when(c.ReviseStep(A, OPERATOR, title="renamed"))

    assert then.answer == c.StepDefined(PLAN, StepDef(A, 0, "renamed", "", (), BEFORE))
    revised = then.one(ev.StepRevised)
    assert then.kinds == ["StepRevised"]
    assert (revised.originator_id, revised.step_id, revised.title, revised.body) == (
        PLAN_STREAM, A, "renamed", None)


def test_revise_of_an_unknown_step_is_refused() -> None:
    then = given(plan(), *step(A)).when(c.ReviseStep("Z", OPERATOR, title="x"))
    assert then.refused(errors.UnknownStep).step_id == "Z"
    assert then.events == []


def test_declare_dependencies_records_only_the_new_ones() -> None:
    scene = given(plan(), *step(A), *step(B), *step(C, after=[A]))
    then = scene.when(c.DeclareDependencies(C, (A, B), OPERATOR))

    assert then.answer.step.depends_on == (A, B)
    declared = then.one(ev.DependenciesDeclared)
    assert then.kinds == ["DependenciesDeclared"]
    assert (declared.originator_id, declared.step_id, declared.depends_on) == (
        PLAN_STREAM, C, [B])


def test_declare_dependencies_closing_a_cycle_is_refused_naming_it() -> None:
    scene = given(plan(), *step(A), *step(B, after=[A]), *step(C, after=[B]))
    then = scene.when(c.DeclareDependencies(A, (C,), OPERATOR))
    assert then.refused(errors.DependencyCycle).cycle == [A, C, B, A]
    assert then.events == []


def test_declare_a_step_dependent_on_itself_is_refused() -> None:
    then = given(plan(), *step(A)).when(c.DeclareDependencies(A, (A,), OPERATOR))
    assert then.refused(errors.SelfDependency).step_id == A
    assert then.events == []

