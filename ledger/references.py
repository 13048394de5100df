"""Resolving a step reference (`plan#N`, `plan/key`, a bare key) to the step's id.

Every door (HTTP, MCP, the CLI, the Python client, the commit guard) hands what a caller
typed for a step to `resolve_step` before the command value is built, through the one
`Service` (api.service) or the read answers (api.reads): events, recordings and replays
hold ids only. A plan is read fresh from the store by its slug; only a bare key asks the
read model which plans have a step of that key, and the answer is checked on the store.
"""

from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import StepId
from planledger.ledger.domain.references import find_step, parse_reference, shown
from planledger.ledger.ports import CandidateView
from planledger.ledger.store import EventStore

C = TypeVar("C", bound=c.Command[Any])


def resolve_step(store: EventStore, view: CandidateView, text: str) -> StepId:
    """The id of the step `text` names: an id as it is (an unknown one is refused where it
    is used), a reference by its plan. An unknown reference is `UnknownStep(text)`; a bare
    key that steps of several plans carry is `AmbiguousReference` naming each one."""
    reference = parse_reference(text)
    if reference is None:
        return StepId(text)
    slug = reference.plan
    if slug is None:  # a bare key
        plans = list(view.plans_with_key(text))
        if not plans:
            return StepId(text)  # no step has this key: the text may be an id
        if len(plans) > 1:
            raise errors.AmbiguousReference(text, [f"{p}/{text}" for p in plans])
        slug = plans[0]
    try:
        plan = store.plan(slug)
    except errors.UnknownPlan:
        raise errors.UnknownStep(shown(text)) from None
    found = find_step(plan, reference)
    if found is None:
        raise errors.UnknownStep(shown(text))
    return found


def with_step_ids(command: C, resolve: Callable[[str], StepId]) -> C:
    """The command with every step it names (`step_id`, `depends_on`, `parent`,
    `discovered_from`, and those of a new plan's steps) given by id. A new plan's step
    naming the key of one of the plan's own steps keeps the key: the plan's handler wires
    those."""
    changes: dict[str, Any] = {}
    step_id = getattr(command, "step_id", None)
    if isinstance(step_id, str):
        changes["step_id"] = resolve(step_id)
    depends_on = getattr(command, "depends_on", None)
    if depends_on:
        changes["depends_on"] = tuple(_dependency(resolve, d) for d in depends_on)
    for field in _RELATED:
        named = getattr(command, field, None)
        if isinstance(named, str):
            changes[field] = _dependency(resolve, named)
    if isinstance(command, c.CreatePlan) and any(
            s.depends_on or s.parent or s.discovered_from for s in command.steps):
        own = {s.key for s in command.steps if s.key}

        def by_id(text: str) -> str:
            return text if text in own else _dependency(resolve, text)

        changes["steps"] = tuple(
            replace(s, depends_on=tuple(by_id(d) for d in s.depends_on),
                    parent=None if s.parent is None else by_id(s.parent),
                    discovered_from=(None if s.discovered_from is None
                                     else by_id(s.discovered_from)))
            if s.depends_on or s.parent or s.discovered_from else s for s in command.steps)
    return replace(command, **changes) if changes else command  # type: ignore[type-var]


_RELATED = ("parent", "discovered_from")  # the steps a new step relates to (AddStep)


def _dependency(resolve: Callable[[str], StepId], text: str) -> StepId:
    """A dependency by id; one that names no step stays as typed, for the plan's handler
    to refuse as an unknown dependency of the step declaring it (a 422 naming both, where
    a step not found would read as if the request's own route were missing)."""
    try:
        return resolve(text)
    except errors.UnknownStep:
        return StepId(text)
