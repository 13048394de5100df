"""What an existing plan holds, held against the source an import reads again.

Imported again into the plan it made, an import adds nothing, but only if each issue is
the step it made: same title, body, priority, labels, done or open, dependencies and
parent. Any other difference (the issue edited since, or a plan made some other way
with the same keys) is named, field by field, so the import refuses instead of saying
there is nothing to add.
"""

from collections.abc import Sequence

from planledger.api.imports.steps import MAX_SHOWN_KEYS, ImportedStep
from planledger.api.schemas import PlanOut, StepOut

DEFAULT_PRIORITY = 2  # what a step without a priority arrives with
FINISHED = ("done", "dropped")


def differences(plan: PlanOut, steps: Sequence[ImportedStep]) -> list[str]:
    """Each issue the plan holds otherwise than the source says, with the field:
    `bd-g7h8 with another title: "Revoke the family" (the source: "Revoke the WHOLE
    family")`. Issues the plan lacks are not here (the caller names them)."""
    by_key = {s.key: s for s in plan.steps if s.key}
    key_of = {s.step_id: s.key or s.step_id for s in plan.steps}
    found = []
    for step in steps:
        held = by_key.get(step.key)
        if held is not None:
            found += [f"{step.key} with another {what}" for what in _fields(held, step,
                                                                              key_of)]
    return found


def _fields(held: StepOut, step: ImportedStep, key_of: dict[str, str]) -> list[str]:
    pairs = [
        ("title", held.title, step.title),
        ("body", held.body, step.body),
        ("priority", held.priority, DEFAULT_PRIORITY if step.priority is None
         else step.priority),
        ("labels", sorted(held.labels), sorted(step.labels)),
        ("status", "done" if held.status in FINISHED else "open",
         "done" if step.done else "open"),
        ("dependencies", sorted(key_of.get(d, d) for d in held.depends_on),
         sorted((*step.depends_on, *step.declared_after))),
        ("parent", None if held.parent is None else key_of.get(held.parent, held.parent),
         step.parent),
    ]
    return [f"{name}: {_shown(there)} (the source: {_shown(source)})"
            for name, there, source in pairs if there != source]


def _shown(value: object) -> str:
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 80 else text[:77] + "..."


def summary(found: Sequence[str]) -> str:
    """The differences as one message: the first few, then how many more."""
    more = len(found) - MAX_SHOWN_KEYS
    return "; ".join(found[:MAX_SHOWN_KEYS]) + (f"; and {more} more" if more > 0 else "")
