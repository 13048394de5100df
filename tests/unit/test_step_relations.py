"""Step relations (ledger.domain.relations): a parent waits on its open children and
closes itself in the write that finishes the last of them; a child cannot be its own
ancestor; steps arrive done or with a note; labels and links are bounded."""

import pytest

from planledger.api import reads
from planledger.api.runtime import Runtime
from planledger.bench.simulation.reference import Reference
from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.ledger.domain.relations import MAX_LABEL, MAX_LABELS
from planledger.ledger.references import with_step_ids
from tests.support import OPERATOR

PLAN = PlanSlug("epic")


def _epic(rt: Runtime, *more: c.NewStep) -> tuple[StepId, ...]:
    """epic#1 "Epic" with children epic#2 "a" and epic#3 "b" (then `more`)."""
    made = rt.ledger.execute(c.CreatePlan(PLAN, "Epic plan", OPERATOR, steps=(
        c.NewStep("Epic", key="epic"), c.NewStep("a", key="a", parent="epic"),
        c.NewStep("b", key="b", parent="epic"), *more)))
    return made.step_ids


def _log_since(rt: Runtime, position: int) -> list[object]:
    return [e for _, e in rt.store.log_after(position, 1000)]


def test_a_parent_with_open_children_is_blocked_naming_them_and_skipped_by_claim_next(
    rt: Runtime,
) -> None:
    epic, a, _b = _epic(rt)
    agent = rt.ledger.start_session("agent")
    with pytest.raises(errors.Blocked) as refused:
        rt.ledger.claim(epic, agent.id)
    assert 'waits on epic#2 "a" (open), epic#3 "b" (open)' in str(refused.value)
    assert epic not in rt.reads.ready(PLAN)
    assert rt.ledger.claim_next(PLAN, agent.id).step_id == a  # not the epic


def test_the_last_child_done_closes_its_parent_in_the_same_append(rt: Runtime) -> None:
    epic, a, b = _epic(rt)
    agent = rt.ledger.start_session("agent")
    for child in (a, b):
        rt.ledger.claim(child, agent.id)
        start = rt.store.log_end()
        rt.ledger.complete(child, agent.id)
        appended = _log_since(rt, start)
    closed = [e for e in appended if isinstance(e, ev.StepCompleted)]
    assert [(e.originator_id, e.reason) for e in closed] == [(b, None), (epic, "last_child")]
    assert rt.store.step(epic).status == "done"
    assert rt.reads.progress(PLAN).done == 3


def test_a_parent_closes_only_once_every_child_is_done_or_dropped(rt: Runtime) -> None:
    epic, a, b = _epic(rt)
    agent = rt.ledger.start_session("agent")
    rt.ledger.claim(a, agent.id)
    rt.ledger.complete(a, agent.id)
    assert rt.store.step(epic).status == "open"
    rt.ledger.drop(b, OPERATOR)  # a drop closes no parent: the epic is claimable now
    assert rt.store.step(epic).status == "open"
    assert epic in rt.reads.ready(PLAN)


def test_closing_cascades_up_a_chain_of_parents(rt: Runtime) -> None:
    epic, a, b, leaf = _epic(rt, c.NewStep("leaf", parent="b"))
    agent = rt.ledger.start_session("agent")
    rt.ledger.claim(a, agent.id)
    rt.ledger.complete(a, agent.id)
    rt.ledger.claim(leaf, agent.id)
    rt.ledger.complete(leaf, agent.id)
    assert [rt.store.step(s).status for s in (b, epic)] == ["done", "done"]


def test_a_child_that_would_be_its_own_ancestor_is_refused_naming_the_cycle(
    rt: Runtime,
) -> None:
    epic, a, _ = _epic(rt)
    with pytest.raises(errors.DependencyCycle) as refused:
        rt.ledger.execute(c.AddStep(PLAN, "c", OPERATOR, parent=epic, depends_on=(epic,)))
    assert "dependency cycle" in str(refused.value)
    with pytest.raises(errors.DependencyCycle):  # through a dependency declared later
        rt.ledger.declare_dependencies(a, [epic], actor=OPERATOR)
    x = rt.ledger.add_step(PLAN, "x", actor=OPERATOR)
    z = rt.ledger.add_step(PLAN, "z", depends_on=[x], actor=OPERATOR)
    with pytest.raises(errors.DependencyCycle) as through:  # y -> z -> x -> (child) y
        rt.ledger.execute(c.AddStep(PLAN, "y", OPERATOR, parent=x, depends_on=(z,)))
    cycle = through.value.cycle
    assert cycle[1:3] == [z, x] and cycle[0] == cycle[-1]
    assert str(through.value) == "dependency cycle: 'y' -> epic#5 -> epic#4 -> 'y'"
    with pytest.raises(errors.DependencyCycle) as keyed:
        rt.ledger.execute(c.AddStep(PLAN, "y", OPERATOR, parent=x, depends_on=(z,), key="y"))
    assert str(keyed.value) == "dependency cycle: epic/y -> epic#5 -> epic#4 -> epic/y"
    with pytest.raises(errors.DependencyCycle) as declared:
        rt.ledger.declare_dependencies(x, [z], actor=OPERATOR)
    assert str(declared.value) == "dependency cycle: epic#4 -> epic#5 -> epic#4"


def test_a_parent_that_names_no_step_of_the_plan_is_refused_naming_the_field(
    rt: Runtime,
) -> None:
    _epic(rt)
    with pytest.raises(errors.InvalidInput) as refused:
        rt.ledger.execute(c.AddStep(PLAN, "c", OPERATOR, parent="nope"))
    assert "parent" in str(refused.value)
    with pytest.raises(errors.InvalidInput) as later:  # a key of a later step of the request
        rt.ledger.execute(c.CreatePlan("other", "O", OPERATOR, steps=(
            c.NewStep("a", parent="b"), c.NewStep("b", key="b"))))
    assert "parent" in str(later.value)
    elsewhere = c.AddStep(PLAN, "c", OPERATOR, parent="other-plan#1",
                          discovered_from="other-plan#1")
    rt.ledger.execute(c.CreatePlan("other-plan", "O", OPERATOR, steps=(c.NewStep("x"),)))
    with pytest.raises(errors.InvalidInput) as another:
        rt.ledger.execute(with_step_ids(elsewhere, rt.ledger.resolve_step))
    assert str(another.value).endswith(
        "step other-plan#1 is in plan other-plan; a parent is a step of the same plan (epic)")
    with pytest.raises(errors.InvalidInput) as new_plan:
        rt.ledger.execute(with_step_ids(c.CreatePlan("third", "T", OPERATOR, steps=(
            c.NewStep("a", parent="other-plan#1"),)), rt.ledger.resolve_step))
    assert "step other-plan#1 is in plan other-plan; a parent" in str(new_plan.value)


def test_a_step_arrives_done_with_a_note_in_the_append_that_adds_it(rt: Runtime) -> None:
    _epic(rt)
    start = rt.store.log_end()
    made = rt.ledger.execute(c.AddStep(PLAN, "imported", OPERATOR, done=True,
                                       note="held by alice in beads", labels=("ui",)))
    kinds = [type(e).__name__ for e in _log_since(rt, start)]
    assert kinds == ["StepAdded", "StepOpened", "StepCompleted", "StepNoted"]
    assert rt.store.step(made.step.id).status == "done"
    assert made.step.labels == ("ui",)
    history = reads.step_detail(rt, made.step.id).history
    assert [e.type for e in history][-2:] == ["StepCompleted", "StepNoted"]


def test_a_note_left_at_creation_is_handed_to_the_first_claimer(rt: Runtime) -> None:
    rt.ledger.execute(c.CreatePlan("p", "P", OPERATOR, steps=(
        c.NewStep("a", note="in progress in beads, held by bob"),)))
    agent = rt.ledger.start_session("agent")
    grant = rt.ledger.execute(c.ClaimNext("p", agent.id)).grant
    assert grant is not None
    assert [n.text for n in grant.notes] == ["in progress in beads, held by bob"]


def test_labels_and_links_are_bounded_and_refused_naming_the_field(rt: Runtime) -> None:
    _epic(rt)
    for labels, field in (((f"l{i}" for i in range(MAX_LABELS + 1)), "labels"),
                          (("x" * (MAX_LABEL + 1),), "label"), (("two\nlines",), "label"),
                          (("",), "label")):
        with pytest.raises(errors.InvalidInput) as refused:
            rt.ledger.execute(c.AddStep(PLAN, "c", OPERATOR, labels=tuple(labels)))
        assert field in str(refused.value)
    with pytest.raises(errors.InvalidInput) as link:
        rt.ledger.execute(c.AddStep(PLAN, "c", OPERATOR,
                                    links=(c.Link("related", "x" * 1000),)))
    assert "link target" in str(link.value)
    kept = rt.ledger.execute(c.AddStep(PLAN, "c", OPERATOR, labels=("ui", "ui", "api"),
                                       links=(c.Link("duplicates", "bd-a1b2"),)))
    assert kept.step.labels == ("ui", "api")
    assert kept.step.links == (c.Link("duplicates", "bd-a1b2"),)


def test_discovered_from_names_a_step_of_the_plan_by_reference(rt: Runtime) -> None:
    epic, a, _b = _epic(rt)
    added = c.AddStep(PLAN, "found", OPERATOR, discovered_from="epic#2", parent="epic/epic")
    made = rt.ledger.execute(with_step_ids(added, rt.ledger.resolve_step))
    assert (made.step.discovered_from, made.step.parent) == (a, epic)


def test_a_completion_that_closes_a_parent_answers_the_steps_waiting_on_the_parent(
    rt: Runtime,
) -> None:
    _, a, b, after = _epic(rt, c.NewStep("ship", depends_on=("epic",)))
    agent = rt.ledger.start_session("agent")
    answered = []
    for child in (a, b):
        rt.ledger.claim(child, agent.id)
        rt.ledger.complete(child, agent.id)
        answered.append(reads.unblocked(rt, child))
    assert answered == [[], [after]]  # the epic waited on b after a: nothing then


def test_the_simulators_reference_model_reads_parents_as_the_ledger_does(rt: Runtime) -> None:
    epic, a, b = _epic(rt, c.NewStep("old", parent="epic", done=True))[:3]
    agent = rt.ledger.start_session("agent")
    reference = Reference()
    for child in (a, b):
        reference.fold(list(rt.store.log_after(0, 1000)))
        now = rt.reads.clock.now()
        assert reference.ready(PLAN, now) == list(rt.reads.ready(PLAN))
        assert reference.claim(epic, agent.id, now) == "blocked"
        rt.ledger.claim(child, agent.id)
        rt.ledger.complete(child, agent.id)
    reference.fold(list(rt.store.log_after(0, 1000)))
    assert reference.violations == []
    assert reference.steps[epic].status == "done"


def _epic_after_first(rt: Runtime, **epic: object) -> tuple[StepId, ...]:
    """first; epic depends on first; kid under epic; down depends on epic."""
    made = rt.ledger.execute(c.CreatePlan(PLAN, "Epic plan", OPERATOR, steps=(
        c.NewStep("first", key="first"),
        c.NewStep("Epic", key="epic", depends_on=("first",), **epic),  # type: ignore[arg-type]
        c.NewStep("kid", key="kid", parent="epic"),
        c.NewStep("down", key="down", depends_on=("epic",)))))
    return made.step_ids


def test_a_parent_with_an_open_dependency_stays_open_when_its_last_child_finishes(
    rt: Runtime,
) -> None:
    first, epic, kid, down = _epic_after_first(rt)
    agent = rt.ledger.start_session("agent")
    rt.ledger.claim(kid, agent.id)
    rt.ledger.complete(kid, agent.id)
    assert rt.store.step(epic).status == "open"
    assert down not in rt.reads.ready(PLAN)
    with pytest.raises(errors.Blocked):
        rt.ledger.claim(down, agent.id)
    rt.ledger.claim(first, agent.id)  # the last the epic waits on is a dependency
    start = rt.store.log_end()
    rt.ledger.complete(first, agent.id)
    closed = [e for e in _log_since(rt, start) if isinstance(e, ev.StepCompleted)]
    assert [(e.originator_id, e.reason) for e in closed] == [(first, None), (epic, "last_child")]
    assert down in rt.reads.ready(PLAN)


def test_a_parent_that_requires_review_is_claimable_not_closed_and_its_completion_is_reviewed(
    rt: Runtime,
) -> None:
    first, epic, kid, down = _epic_after_first(rt, review_required=True)
    agent = rt.ledger.start_session("agent")
    for s in (first, kid):
        rt.ledger.claim(s, agent.id)
        rt.ledger.complete(s, agent.id)
    assert rt.store.step(epic).status == "open"
    assert epic in rt.reads.ready(PLAN) and down not in rt.reads.ready(PLAN)
    rt.ledger.claim(epic, agent.id)
    rt.ledger.complete(epic, agent.id)
    assert rt.store.step(epic).status == "in_review"


def test_a_plan_requiring_review_never_closes_a_parent_by_itself(rt: Runtime) -> None:
    rt.ledger.execute(c.CreatePlan(PLAN, "Epic plan", OPERATOR, review_required=True, steps=(
        c.NewStep("Epic", key="epic"), c.NewStep("a", key="a", parent="epic"))))
    epic = rt.ledger.resolve_step("epic/epic")
    a = rt.ledger.resolve_step("epic/a")
    author, reviewer = rt.ledger.start_session("author"), rt.ledger.start_session("reviewer")
    rt.ledger.claim(a, author.id)
    rt.ledger.complete(a, author.id)
    rt.ledger.execute(c.Review(a, reviewer.id, "approve"))
    assert rt.store.step(a).status == "done"
    assert rt.store.step(epic).status == "open"
    assert epic in rt.reads.ready(PLAN)


def test_a_child_is_refused_under_a_parent_that_is_not_open_naming_the_rule(
    rt: Runtime,
) -> None:
    epic, a, b = _epic(rt)
    agent = rt.ledger.start_session("agent")
    for child in (a, b):
        rt.ledger.claim(child, agent.id)
        rt.ledger.complete(child, agent.id)
    assert rt.store.step(epic).status == "done"
    with pytest.raises(errors.InvalidInput) as done:
        rt.ledger.execute(c.AddStep(PLAN, "late", OPERATOR, parent=epic))
    assert "parent" in str(done.value) and "epic#1 is done" in str(done.value)
    other = rt.ledger.add_step(PLAN, "other", actor=OPERATOR)
    rt.ledger.claim(other, agent.id)
    with pytest.raises(errors.InvalidInput) as held:  # so a held parent never completes
        rt.ledger.execute(c.AddStep(PLAN, "late", OPERATOR, parent=other))  # with it open
    assert "is in_progress; a step is added only under an open parent" in str(held.value)
    rt.ledger.drop(other, agent.id)
    with pytest.raises(errors.InvalidInput):
        rt.ledger.execute(c.AddStep(PLAN, "late", OPERATOR, parent=other))


def test_a_new_plans_parent_arrives_done_only_with_its_children_done(rt: Runtime) -> None:
    with pytest.raises(errors.InvalidInput) as refused:
        rt.ledger.execute(c.CreatePlan(PLAN, "Epic plan", OPERATOR, steps=(
            c.NewStep("Epic", key="epic", done=True), c.NewStep("a", key="a", parent="epic"))))
    said = str(refused.value)
    assert "epic#1 arrives done" in said and "epic#2 (a) does not" in said
    assert PLAN not in rt.reads.plans  # nothing written
    rt.ledger.execute(c.CreatePlan(PLAN, "Epic plan", OPERATOR, steps=(
        c.NewStep("Epic", key="epic", done=True),
        c.NewStep("a", key="a", parent="epic", done=True))))


def test_reopening_a_child_of_a_done_parent_reopens_the_parent_and_blocks_its_dependents(
    rt: Runtime,
) -> None:
    epic, a, b, leaf, ship = _epic(rt, c.NewStep("leaf", parent="b"),
                                   c.NewStep("ship", depends_on=("epic",)))
    agent = rt.ledger.start_session("agent")
    for s in (a, leaf):
        rt.ledger.claim(s, agent.id)
        rt.ledger.complete(s, agent.id)
    assert [rt.store.step(s).status for s in (b, epic)] == ["done", "done"]
    start = rt.store.log_end()
    rt.ledger.reopen(leaf, OPERATOR)
    reopened = [e for e in _log_since(rt, start) if isinstance(e, ev.StepReopened)]
    assert [(e.originator_id, e.reason) for e in reopened] == [
        (leaf, None), (b, "child_reopened"), (epic, "child_reopened")]
    assert ship not in rt.reads.ready(PLAN)
    with pytest.raises(errors.Blocked):
        rt.ledger.claim(epic, agent.id)


def test_completing_a_parent_with_a_child_reopened_since_its_claim_is_blocked_naming_it(
    rt: Runtime,
) -> None:
    epic, a, b = _epic(rt)
    agent = rt.ledger.start_session("agent")
    for child in (a, b):
        rt.ledger.drop(child, OPERATOR)
    rt.ledger.claim(epic, agent.id)  # its children dropped: claimable
    rt.ledger.reopen(b, OPERATOR)
    with pytest.raises(errors.Blocked) as refused:
        rt.ledger.complete(epic, agent.id)
    assert 'step epic#1 "Epic" waits on epic#3 "b" (open)' in str(refused.value)
    assert rt.store.step(epic).status == "in_progress"


def test_approving_a_parent_with_a_child_reopened_since_its_completion_is_blocked(
    rt: Runtime,
) -> None:
    rt.ledger.execute(c.CreatePlan(PLAN, "Epic plan", OPERATOR, steps=(
        c.NewStep("Epic", key="epic", review_required=True),
        c.NewStep("a", key="a", parent="epic"))))
    epic, a = rt.ledger.resolve_step("epic/epic"), rt.ledger.resolve_step("epic/a")
    author, reviewer = rt.ledger.start_session("author"), rt.ledger.start_session("reviewer")
    rt.ledger.drop(a, OPERATOR)
    rt.ledger.claim(epic, author.id)
    rt.ledger.complete(epic, author.id)  # in review
    rt.ledger.reopen(a, OPERATOR)
    with pytest.raises(errors.Blocked) as refused:
        rt.ledger.execute(c.Review(epic, reviewer.id, "approve"))
    assert 'waits on epic#2 "a" (open)' in str(refused.value)
    assert rt.store.step(epic).status == "in_review"
