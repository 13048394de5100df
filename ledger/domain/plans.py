"""Decisions on a plan's structure: creating it, adding and revising steps, dependencies."""

import re
from collections.abc import Container, Mapping, Sequence
from datetime import datetime

from planledger.ledger.domain import errors, relations, texts
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import (
    Actor,
    PlanSlug,
    SessionId,
    StepId,
    acting_session,
    plan_stream,
)
from planledger.ledger.domain.references import check_key, step_reference
from planledger.ledger.domain.state import Link, PlanState

# The checks of written text (ledger.domain.texts), where the plan's rules were first kept.
check_line = texts.check_line
check_text = texts.check_text

SLUG_PATTERN = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
MAX_TITLE = 300
MAX_BODY = 20_000
MAX_WHERE = 1_000  # a session's cwd, source or model
MAX_DEPENDENCIES = 200
MAX_STEPS_PER_PLAN = 100_000
MAX_CONSTRAINTS = 100
MAX_CONSTRAINT_RULE = 1_000


def check_slug(slug: str) -> PlanSlug:
    if not SLUG_PATTERN.match(slug):
        raise errors.InvalidInput(
            "slug", f"{slug[:80]!r} is not 1-64 lowercase letters, digits and inner hyphens"
        )
    return PlanSlug(slug)


def check_constraints(constraints: Mapping[str, str]) -> dict[str, str]:
    if len(constraints) > MAX_CONSTRAINTS:
        raise errors.InvalidInput("constraints", f"more than {MAX_CONSTRAINTS}")
    for name, rule in constraints.items():
        check_slug_like_name(name)
        check_text(f"constraint {name!r}", rule, MAX_CONSTRAINT_RULE, required=True)
    return dict(constraints)


def check_slug_like_name(name: str) -> None:
    if not SLUG_PATTERN.match(name):
        raise errors.InvalidInput(
            "constraint name", f"{name[:80]!r} is not lowercase letters, digits and hyphens"
        )


def decide_create_plan(
    slug: str, title: str, constraints: Mapping[str, str], actor: Actor,
    now: datetime, require_checks_pass: bool = False, review_required: bool = False,
) -> ev.PlanCreated:
    """A new plan. `require_checks_pass`: its completions must report no failed check.
    `review_required`: each completion waits for a review (ledger.domain.review)."""
    checked = check_slug(slug)
    if not isinstance(require_checks_pass, bool):
        raise errors.InvalidInput("require_checks_pass", "is true or false")
    if not isinstance(review_required, bool):
        raise errors.InvalidInput("review_required", "is true or false")
    return ev.PlanCreated(
        plan_stream(checked), 1, timestamp=now, session_id=acting_session(actor), actor=actor,
        slug=checked,
        title=check_line("title", title, MAX_TITLE, required=True),
        constraints=check_constraints(constraints),
        require_checks_pass=require_checks_pass or None,  # unset: stored as before
        review_required=review_required or None,
    )


def check_priority(priority: int | None) -> int | None:
    """0 (highest) .. 4, or None (the default on an addition, unchanged on a revision)."""
    if priority is not None and (isinstance(priority, bool) or not 0 <= priority <= 4):
        raise errors.InvalidInput("priority", f"{priority!r} is not 0 (highest) .. 4")
    return priority


def priority_from_text(text: str) -> int:
    """A priority as people write it: its number (`0`..`4`), or as beads writes it
    (`P0`..`P4`)."""
    said = text.strip()
    digits = said[1:] if said[:1] in ("P", "p") else said
    if len(digits) == 1 and digits in "01234":
        return int(digits)
    raise errors.InvalidInput("priority", f"{said[:20]!r} is not 0 (highest) .. 4, nor P0 .. P4")


def decide_add_step(
    plan: PlanState, version: int, step_id: StepId, title: str, body: str,
    depends_on: Sequence[str], actor: Actor, now: datetime, priority: int | None = None,
    review_required: bool = False, key: str | None = None,
    keys_taken: Container[str] | None = None, *, parent: str | None = None,
    discovered_from: str | None = None, labels: Sequence[str] = (),
    links: Sequence[Link] = (), parent_status: str = "open",
    elsewhere: Mapping[str, tuple[str, str]] | None = None,
) -> tuple[ev.StepAdded, ev.StepOpened]:
    """Add a step to the plan (at plan version `version`) and open its own stream.
    `review_required`: its completion waits for a review (ledger.domain.review). `key`
    names it within the plan (unique there); `keys_taken`: the plan's keys, when the
    caller keeps them (else the plan's steps are read for them). `parent`,
    `discovered_from`, `labels` and `links`: its relations (ledger.domain.relations);
    `parent_status`: the parent's status as the caller read it (a child goes only under an
    open parent); `elsewhere`: steps of other plans it names, by id, as (reference, plan),
    for a refusal that says so."""
    if not isinstance(review_required, bool):
        raise errors.InvalidInput("review_required", "is true or false")
    if len(plan.steps) >= MAX_STEPS_PER_PLAN:
        raise errors.InvalidInput("steps", f"plan {plan.slug} has the limit of "
                                           f"{MAX_STEPS_PER_PLAN} steps")
    if key is not None:
        _check_key_free(plan, check_key(key), keys_taken)
    deps = _checked_dependencies(plan, step_id, depends_on)
    under = relations.check_related(plan, "parent", None if parent is None else StepId(parent),
                                    elsewhere)
    relations.check_parent_open(plan, under, parent_status)
    origin = relations.check_related(plan, "discovered_from",
                                     None if discovered_from is None else StepId(discovered_from),
                                     elsewhere)
    cycle = relations.parent_cycle(plan, step_id, under, deps)
    if cycle:
        new = f"{plan.slug}/{key}" if key is not None else repr(title[:80])
        raise errors.DependencyCycle(cycle, cycle_names(plan, cycle, {step_id: new}))
    added = ev.StepAdded(
        plan.id, version, timestamp=now, session_id=acting_session(actor), actor=actor,
        step_id=step_id,
        title=check_line("title", title, MAX_TITLE, required=True),
        body=check_text("body", body, MAX_BODY, required=False),
        depends_on=list(deps), priority=check_priority(priority),
        review_required=review_required or None,  # unset: stored as before
        key=key, parent=under, discovered_from=origin,
        labels=relations.check_labels(labels) or None,
        links=relations.check_links(links) or None,
    )
    opened = ev.StepOpened(step_id, 1, timestamp=now, session_id=acting_session(actor),
                           actor=actor, plan=plan.slug)
    return added, opened


def _check_key_free(plan: PlanState, key: str, keys_taken: Container[str] | None) -> None:
    taken = (key in keys_taken if keys_taken is not None
             else any(d.key == key for d in plan.steps.values()))
    if taken:
        raise errors.InvalidInput("key", f"{key!r} names another step of plan {plan.slug} "
                                         "already; a key is unique within its plan")


def _check_not_held_elsewhere(step_id: StepId, actor: Actor, holder: SessionId | None,
                              holder_name: str | None) -> None:
    """A step with a live holder is that session's to change, or an operator's (the
    admin, the local operator): the work it describes is under way."""
    session = acting_session(actor)
    if holder is not None and session is not None and session != holder:
        raise errors.HeldElsewhere(step_id, holder, holder_name)


def decide_revise_step(
    plan: PlanState, step_id: StepId, title: str | None, body: str | None,
    actor: Actor, now: datetime, holder: SessionId | None = None,
    holder_name: str | None = None, priority: int | None = None,
) -> ev.StepRevised:
    """Revise a step. A step with a live `holder` is that session's to revise (or an
    operator's: the admin, the local operator), as the work it describes is under way."""
    if step_id not in plan.steps:
        raise errors.UnknownStep(step_id)
    _check_not_held_elsewhere(step_id, actor, holder, holder_name)
    if title is not None:
        check_line("title", title, MAX_TITLE, required=True)
    if body is not None:
        check_text("body", body, MAX_BODY, required=False)
    return ev.StepRevised(
        plan.id, plan.version + 1, timestamp=now, session_id=acting_session(actor),
        actor=actor, step_id=step_id,
        title=title, body=body, priority=check_priority(priority),
    )


def decide_declare_dependencies(
    plan: PlanState, step_id: StepId, depends_on: Sequence[str], actor: Actor,
    now: datetime, holder: SessionId | None = None, holder_name: str | None = None,
) -> ev.DependenciesDeclared:
    """New dependencies are a revision: a held step's are its holder's (or an operator's)."""
    if step_id not in plan.steps:
        raise errors.UnknownStep(step_id)
    _check_not_held_elsewhere(step_id, actor, holder, holder_name)
    existing = plan.steps[step_id].depends_on
    new = [d for d in _checked_dependencies(plan, step_id, depends_on) if d not in existing]
    if len(existing) + len(new) > MAX_DEPENDENCIES:
        raise errors.InvalidInput("depends_on", f"more than {MAX_DEPENDENCIES} dependencies")
    cycle = find_cycle(plan, step_id, new)
    if cycle:
        raise errors.DependencyCycle(cycle, cycle_names(plan, cycle))
    return ev.DependenciesDeclared(
        plan.id, plan.version + 1, timestamp=now, session_id=acting_session(actor),
        actor=actor, step_id=step_id,
        depends_on=list(new),
    )


def _checked_dependencies(
    plan: PlanState, step_id: StepId, depends_on: Sequence[str]
) -> list[StepId]:
    if len(depends_on) > MAX_DEPENDENCIES:
        raise errors.InvalidInput("depends_on", f"more than {MAX_DEPENDENCIES} dependencies")
    deps = list(dict.fromkeys(StepId(d) for d in depends_on))
    if step_id in deps:
        raise errors.SelfDependency(step_id)
    unknown = [d for d in deps if d not in plan.steps]
    if unknown:
        raise errors.UnknownDependency(step_id, unknown)
    return deps


def find_cycle(plan: PlanState, step_id: StepId, new_deps: Sequence[StepId]) -> list[str]:
    """The path step -> dep -> ... -> step that `new_deps` would close, or [] if none."""
    parents: dict[StepId, StepId] = {}
    stack = list(new_deps)
    for dep in new_deps:
        parents[dep] = step_id
    while stack:
        current = stack.pop()
        if current == step_id:
            return _path_back(parents, step_id)
        for nxt in plan.steps[current].waits_on:  # a parent waits on its children too
            if nxt not in parents:
                parents[nxt] = current
                stack.append(nxt)
    return []


def cycle_names(plan: PlanState, cycle: Sequence[str],
                new: Mapping[str, str] | None = None) -> dict[str, str]:
    """How a cycle's message names its steps: by reference (`plan#N`), a step not added
    yet as `new` says (its key or title), never by an id nobody can look up."""
    names = dict(new or {})
    for s in cycle:
        if s not in names and (definition := plan.steps.get(StepId(s))) is not None:
            names[s] = step_reference(plan.slug, definition.position)
    return names


def _path_back(parents: Mapping[StepId, StepId], step_id: StepId) -> list[str]:
    path = [step_id]
    node = parents[step_id]
    while node != step_id:
        path.append(node)
        node = parents[node]
    path.append(step_id)
    path.reverse()
    return [str(p) for p in path]
