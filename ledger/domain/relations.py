"""A step's relations to other steps: its parent, the step it was discovered from, its
labels and other links.

- **Parent** (an epic): a step of the same plan the new step belongs under. A parent waits
  on its children as on its dependencies (`StepDef.waits_on`): while one is open it is not
  claimable, and a claim on it is refused as blocked, naming them. When a completion (or
  an approval) of a child or a dependency of an open, unheld parent leaves everything the
  parent waits on done or dropped, the parent closes in the same write (`StepCompleted`
  with reason "last_child"), and so on up. A parent that requires a review (its own
  setting or its plan's) never closes itself: it is then claimable, and its holder's
  completion goes to review as any step's. A child goes only under an open parent (not
  one held, in review, done or dropped; a new plan's parent arrives done only with all
  its children done), and reopening a child of a done parent reopens the parent in the
  same write (`StepReopened` with reason "child_reopened"), and so on up: a parent is
  never done with an open child (its holder's completion, with a child reopened since
  the claim, is refused as blocked, naming it). A child that would be its own ancestor,
  through parents and dependencies, is refused as a cycle.
- **Discovered from**: the step of the same plan the new one was found while working on
  (beads' `discovered-from`); kept and shown, it orders nothing.
- **Labels**: free one-line texts; **links**: other relations kept verbatim (`kind`,
  `target`), never resolved.

The parent and the step it was discovered from are set when a step is added, never
changed after.
"""

from collections.abc import Callable, Container, Mapping, Sequence
from datetime import datetime

from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import Actor, StepId, acting_session
from planledger.ledger.domain.references import step_reference
from planledger.ledger.domain.state import SATISFYING, Link, PlanState, StepDef, StepState
from planledger.ledger.domain.texts import check_line

MAX_LABELS = 50
MAX_LABEL = 100
MAX_LINKS = 100
MAX_LINK_KIND = 64
MAX_LINK_TARGET = 300
MAX_ANCESTRY = 1_000  # how far a completion closes parents up (a chain is never longer)


def check_labels(labels: Sequence[str]) -> list[str]:
    """The labels, each once, in their order: one-line texts within the bounds."""
    if isinstance(labels, str) or len(labels) > MAX_LABELS:
        raise errors.InvalidInput("labels", f"is a list of at most {MAX_LABELS} labels")
    for label in labels:
        if not isinstance(label, str):
            raise errors.InvalidInput("labels", f"{label!r} is not text")
        check_line("label", label, MAX_LABEL, required=True)
    return list(dict.fromkeys(labels))


def check_links(links: Sequence[Link]) -> list[dict[str, str]]:
    """The links as events keep them: a kind and a target, one-line texts within bounds."""
    if len(links) > MAX_LINKS:
        raise errors.InvalidInput("links", f"more than {MAX_LINKS} links")
    records = []
    for link in links:
        if not isinstance(link, Link):
            raise errors.InvalidInput("links", "each link has a kind and a target")
        check_line("link kind", link.kind, MAX_LINK_KIND, required=True)
        check_line("link target", link.target, MAX_LINK_TARGET, required=True)
        records.append({"kind": link.kind, "target": link.target})
    return records


def check_related(plan: PlanState, field: str, step_id: StepId | None,
                  elsewhere: Mapping[str, tuple[str, str]] | None = None) -> StepId | None:
    """A parent or an origin: a step of the plan, or InvalidInput naming the field.
    `elsewhere`: the steps of other plans the caller named, by id, as (reference, plan)."""
    if step_id is None or step_id in plan.steps:
        return step_id
    if elsewhere and step_id in elsewhere:
        reference, other = elsewhere[step_id]
        said = "a parent" if field == "parent" else "the step it was discovered from"
        raise errors.InvalidInput(field, f"step {reference} is in plan {other}; {said} is a "
                                         f"step of the same plan ({plan.slug})")
    raise errors.InvalidInput(field, f"{str(step_id)[:80]!r} names no step of plan "
                                     f"{plan.slug}")


def parent_cycle(plan: PlanState, step_id: StepId, parent: StepId | None,
                 depends_on: Sequence[StepId]) -> list[str]:
    """The cycle a new step under `parent` waiting on `depends_on` would close, as a path
    step -> ... -> step (the parent waits on it; it waits on what leads to the parent), or
    [] if none."""
    if parent is None:
        return []
    seen: dict[StepId, StepId] = {d: step_id for d in depends_on}
    stack = list(depends_on)
    while stack:
        current = stack.pop()
        if current == parent:
            back = [parent]
            while seen[back[-1]] != step_id:
                back.append(seen[back[-1]])
            return [str(s) for s in (step_id, *reversed(back), step_id)]
        definition = plan.steps.get(current)
        for nxt in definition.waits_on if definition is not None else ():
            if nxt not in seen:
                seen[nxt] = current
                stack.append(nxt)
    return []


def closed_parents(
    plan: PlanState, definition: StepDef, step_of: Callable[[StepId], StepState],
    actor: Actor, now: datetime,
) -> list[ev.StepCompleted]:
    """The parents a completion of `definition`'s step closes: each parent whose child or
    dependency it is, once everything the parent waits on (dependencies and children) is
    done or dropped, nobody holds it (it is open) and no review is required of it; then,
    from each parent closed, the parents waiting on it likewise, and so on. `step_of`
    reads a step as it is before the completion."""
    closed: list[ev.StepCompleted] = []
    finished = {definition.id}
    frontier = [definition.id]
    while frontier and len(closed) < MAX_ANCESTRY:
        for parent in _parents_waiting_on(plan, frontier.pop(0)):
            state = step_of(parent.id)
            if (parent.id in finished or state.status != "open" or _reviewed(plan, parent)
                    or any(w not in finished and step_of(w).status not in SATISFYING
                           for w in parent.waits_on)):
                continue
            closed.append(ev.StepCompleted(
                state.id, state.version + 1, timestamp=now, session_id=acting_session(actor),
                actor=actor, fence=state.fence, reason="last_child"))
            finished.add(parent.id)
            frontier.append(parent.id)
    return closed


def _parents_waiting_on(plan: PlanState, step_id: StepId) -> list[StepDef]:
    """The parents (steps with children) that wait on the step: as its parent, or as a
    step that depends on it."""
    found = (plan.steps[p] for p in plan.parents)
    return [d for d in found if step_id in d.children or step_id in d.depends_on]


def _reviewed(plan: PlanState, parent: StepDef) -> bool:
    """Whether the parent's completion waits for a review (ledger.domain.review's
    needs_review, which imports this module's callers): such a parent never closes
    itself; once all it waits on is closed it is claimable, and its holder's completion
    goes to review."""
    return plan.review_required or parent.review_required


def reopened_parents(
    plan: PlanState, definition: StepDef, step_of: Callable[[StepId], StepState],
    actor: Actor, now: datetime,
) -> list[ev.StepReopened]:
    """The parents a reopening of `definition`'s step reopens: its parent if it is done
    (a parent is never done with an open child), then that parent's parent likewise."""
    reopened: list[ev.StepReopened] = []
    parent_id = definition.parent
    while parent_id is not None and len(reopened) < MAX_ANCESTRY:
        parent = plan.steps.get(parent_id)
        state = step_of(parent_id) if parent is not None else None
        if parent is None or state is None or state.status != "done":
            break
        reopened.append(ev.StepReopened(
            state.id, state.version + 1, timestamp=now, session_id=acting_session(actor),
            actor=actor, reason="child_reopened"))
        parent_id = parent.parent
    return reopened


def check_parent_open(plan: PlanState, parent: StepId | None, status: str) -> None:
    """A new child goes only under an open parent: one held, in review, done or dropped
    would finish (or be finished) without it. InvalidInput naming the parent."""
    if parent is not None and status != "open":
        definition = plan.steps[parent]
        raise errors.InvalidInput("parent", f"step {_reference(plan, definition)} is "
                                  f"{status}; a step is added only under an open parent")


def check_arrives_done(plan: PlanState, parent: StepId | None, arrived_done: Container[StepId],
                      done: bool, key: str | None) -> None:
    """A new plan's parent arrives done only with all its children done: a child that is
    not done under one that is is refused, naming both."""
    if parent is None or done or parent not in arrived_done:
        return
    child = step_reference(plan.slug, len(plan.steps))
    named = child if key is None else f"{child} ({key})"
    raise errors.InvalidInput("parent", f"step {_reference(plan, plan.steps[parent])} "
                              f"arrives done and its child {named} does not; a parent "
                              "arrives done only with all its children done")


def open_children(plan: PlanState, definition: StepDef,
                  step_of: Callable[[StepId], StepState]) -> errors.Blocked | None:
    """A completion of a parent waits on its children as its claim did: one reopened since
    the claim (a child is never added under a held parent) blocks it, named."""
    blockers = [(c, status) for c in definition.children
                if (status := step_of(c).status) not in SATISFYING]
    if not blockers:
        return None
    named = (definition.id, *(b for b, _ in blockers))
    return errors.Blocked(definition.id, definition.title,
                          [(b, plan.steps[b].title, s) for b, s in blockers],
                          {s: _reference(plan, plan.steps[s]) for s in named})


def _reference(plan: PlanState, definition: StepDef) -> str:
    return step_reference(plan.slug, definition.position)


def children_line(definition: StepDef, status_of: Callable[[StepId], str]) -> str | None:
    """A parent's roll-up of its children, e.g. "2/5 children done" (None: no children)."""
    if not definition.children:
        return None
    done = sum(1 for c in definition.children if status_of(c) == "done")
    total = len(definition.children)
    return f"{done}/{total} {'child' if total == 1 else 'children'} done"
