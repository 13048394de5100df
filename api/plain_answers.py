"""Read answers as plain fields: the dicts the API's schemas are made from (api.schemas'
StepOut, ReadyOut, PlanSummaryOut), built without pydantic.

api.reads makes its schemas from these. The command line's short path on the embedded
store (api.cli.calls) prints them as they are. So an embedded `planledger ready` or
`planledger plan list` loads neither pydantic nor the schemas, which were a large part of
such a call (figure: bench/findings.md). Each dict holds every field of its schema,
defaults included, in the schema's order, with the values its `model_dump()` gives
(moments as datetimes). tests/unit/test_plain_answers.py holds the two equal.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any, Protocol

from planledger.ledger.domain import errors
from planledger.ledger.domain.claims import Verdict
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId
from planledger.ledger.domain.paths import Budget, OverBudget, PathSpec
from planledger.ledger.domain.references import step_reference
from planledger.ledger.domain.relations import children_line
from planledger.ledger.domain.state import PlanState, StepDef, StepState
from planledger.projections import queries, reservations
from planledger.projections.readmodel import ReadModel
from planledger.projections.reservations import HeldPaths, Meeting
from planledger.projections.view import LedgerView

Fields = dict[str, Any]


class Readable(Protocol):
    """What the answers here read: a read model (an api.runtime.Runtime's, or an embedded
    store's file read by a process that only reads: infra.sqlite_reading.Reading)."""

    @property
    def reads(self) -> ReadModel: ...


MAX_PAGE = 1000


def check_page(limit: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise errors.InvalidInput("limit", f"{limit} is outside 1..{MAX_PAGE}")


def plan_of(view: LedgerView, slug: str) -> PlanState:
    plan = view.plans.get(PlanSlug(slug))
    if plan is None:
        raise errors.UnknownPlan(slug[:100])
    return plan


def in_order(view: LedgerView, plan: PlanState) -> list[StepDef]:
    """The plan's steps the view holds, oldest first (their `position` grows with it)."""
    return [d for d in sorted(plan.steps.values(), key=lambda d: (d.added_at, d.id))
            if d.id in view.steps]


# --- steps -----------------------------------------------------------------------------


def paths_fields(paths: Iterable[PathSpec]) -> list[Fields]:
    """PathOut's fields of each path."""
    return [{"pattern": p.pattern, "mode": p.mode} for p in paths]


def step_fields(definition: StepDef, state: StepState, verdict: Verdict | None,
                definitions: dict[StepId, StepDef],
                status_of: Callable[[StepId], str]) -> Fields:
    """StepOut's fields of a step, judged by `verdict` (None: closed), before what its
    claim reserves or would collide with (`annotate`). `status_of` gives a child's status
    for a parent's roll-up."""
    kind = verdict.kind if verdict else "closed"
    holder = verdict.holder if verdict and kind == "held" else None
    return {
        "step_id": definition.id, "id": definition.id,
        "ref": step_reference(state.plan, definition.position), "plan": state.plan,
        "position": definition.position,
        # Present only when the step has a key, as StepOut leaves it out otherwise.
        **({"key": definition.key} if definition.key is not None else {}),
        "title": definition.title,
        "priority": definition.priority, "body": definition.body,
        "depends_on": list(definition.depends_on),
        # A step claimable after a lapse reads as open: its lease no longer holds it.
        "status": "open" if kind == "claimable" else state.status,
        "claimable": kind == "claimable", "holder": holder,
        "lapsed_holder": verdict.holder if verdict and kind == "claimable" else None,
        "fence": state.fence, "expires_at": state.expires_at if holder else None,
        "blockers": [_blocker(definitions, state.plan, b, s)
                     for b, s in (verdict.blockers if verdict else ())],
        "paths": paths_fields(definition.paths), "reserved": [], "collides_with": [],
        **_review_fields(definition, state, verdict),
        **_relation_fields(definition, definitions, state.plan, status_of),
    }


def _relation_fields(definition: StepDef, definitions: dict[StepId, StepDef], plan: str,
                     status_of: Callable[[StepId], str]) -> Fields:
    """StepOut's relation fields (ledger.domain.relations), present only when set."""
    found: Fields = {}
    for name, related in (("parent", definition.parent),
                          ("discovered_from", definition.discovered_from)):
        if related is not None:
            found[name] = related
            known = definitions.get(related)
            if known is not None:
                found[f"{name}_ref"] = step_reference(plan, known.position)
    if definition.labels:
        found["labels"] = list(definition.labels)
    if definition.links:
        found["links"] = [{"kind": k.kind, "target": k.target} for k in definition.links]
    line = children_line(definition, status_of)
    if line is not None:
        found["children"] = line
    return found


def _review_fields(definition: StepDef, state: StepState, verdict: Verdict | None) -> Fields:
    """StepOut's review fields, present only when set (as StepOut leaves them out)."""
    found: Fields = {}
    if definition.review_required:
        found["review_required"] = True
    if state.status == "in_review":
        found["author"] = state.author
        if verdict is not None and verdict.holder is not None:
            found["reviewer"] = verdict.holder
    return found


def _blocker(definitions: dict[StepId, StepDef], plan: str, step_id: StepId,
             status: str) -> Fields:
    """BlockerOut's fields of a step that one waits on (a step of the same plan)."""
    found = definitions.get(step_id)
    return {"step_id": step_id, "title": found.title if found else "", "status": status,
            "ref": step_reference(plan, found.position) if found else None}


def annotate(view: LedgerView, moment: datetime, steps: Sequence[tuple[StepDef, Fields]],
             asker: SessionId | None = None) -> list[Fields]:
    """The steps' fields with what their live claims reserved and, for claimable ones, the
    live reservations of sessions other than the `asker` they would bounce off (none held:
    the fields as they are), and their holders' session names. api.reads makes its step
    schemas from these too."""
    for _, fields in steps:
        holder = view.sessions.get(fields["holder"]) if fields["holder"] else None
        if holder is not None and holder.name:  # absent otherwise, as StepOut leaves it
            _name_holder(fields, holder.name)
    held = reservations.live(view, moment)
    if held:
        by_step: dict[str, HeldPaths] = {h.step_id: h for h in held}
        budget = Budget()  # one for the whole list: a list is one request
        for definition, fields in steps:
            mine = by_step.get(definition.id)
            if mine is not None:
                fields["reserved"] = paths_fields(mine.paths)
            if fields["claimable"] and definition.paths:
                found = _colliding(view, definition, moment, asker, held, budget)
                fields["collides_with"] = [_collision(m) for m in found or ()]
    return [fields for _, fields in steps]


def _name_holder(fields: Fields, name: str) -> None:
    """Add `holder_name` right after `holder`, where StepOut has it: the plain fields
    print as the schema's JSON, key for key (`--json` on either path)."""
    items = list(fields.items())
    fields.clear()
    for key, value in items:
        fields[key] = value
        if key == "holder":
            fields["holder_name"] = name


def _colliding(view: LedgerView, definition: StepDef, moment: datetime,
               asker: SessionId | None, held: Sequence[HeldPaths], budget: Budget,
               ) -> list[Meeting] | None:
    """The step's collisions; None once the list's budget is spent (a claim decides
    them then, within its own): a hostile reservation slows no list."""
    try:
        return reservations.collisions(view, definition.paths, moment, asker, held, budget)
    except OverBudget:
        return None


def _collision(found: Meeting) -> Fields:
    held = found.held
    return {"holder": held.session_id, "holder_name": held.session_name,
            "step_id": held.step_id, "ref": held.ref, "title": held.title,
            "patterns": list(found.patterns)}


def free_first(view: LedgerView, moment: datetime, steps: list[StepDef],
               asker: SessionId | None = None) -> list[StepDef]:
    """Claimable steps, those a claim by the `asker` would not bounce off a reservation
    first (each group in its own order)."""
    held = reservations.live(view, moment)
    if not held:
        return steps
    free: list[StepDef] = []
    colliding: list[StepDef] = []
    budget = Budget()
    for definition in steps:
        bounced = _colliding(view, definition, moment, asker, held, budget)
        (free if bounced == [] else colliding).append(definition)
    return free + colliding


# --- answers ---------------------------------------------------------------------------


def plans(runtime: Readable) -> list[Fields]:
    """PlanSummaryOut's fields of every plan, oldest first (finished ones retired from the
    read model too)."""
    with runtime.reads.reading() as (view, moment):
        held = [(p.created_at, p.slug, p.title) for p in view.plans.values()]
        retired = [(f.created_at, f.slug, f.title) for f in view.finished.values()]
        return [{"slug": slug, "title": title, "created_at": created,
                 "progress": asdict(queries.progress(view, slug, moment))}
                for created, slug, title in sorted(held + retired)]


def ready(runtime: Readable, slug: str, listed: Sequence[StepId] | None = None,
          limit: int | None = None, asker: SessionId | None = None) -> Fields:
    """ReadyOut's fields: the plan's ready steps (or the `listed` ones a session was
    shown), held and blocked, oldest first; with `limit`, at most that many of each, and
    how many there are. The `asker`'s own reservations are no collision for it (a claim of
    its own never bounces off them)."""
    if limit is not None:
        check_page(limit)
    with runtime.reads.reading() as (live, moment):
        view = runtime.reads.detail(live, PlanSlug(slug))
        state = plan_of(view, slug)
        judged = dict(queries.verdicts(view, state.slug, moment))
        order = in_order(view, state)
        kinds: dict[str, list[StepDef]] = {"claimable": [], "held": [], "blocked": [],
                                           "in_review": []}
        for d in order:
            verdict = judged.get(d.id)
            if verdict is not None and verdict.kind in kinds:
                kinds[verdict.kind].append(d)
        kinds["claimable"].sort(key=lambda d: (d.priority, d.added_at, d.id))  # ready-list order
        totals = {k: len(v) for k, v in kinds.items()}
        if listed is not None:
            known = {d.id: d for d in order}
            kinds["claimable"] = [known[s] for s in listed if s in known]
        kinds["claimable"] = free_first(view, moment, kinds["claimable"], asker)
        cut = {k: v[:limit] if limit is not None else v for k, v in kinds.items()}

        def out(ds: list[StepDef]) -> list[Fields]:
            return annotate(view, moment, [(d, step_fields(d, view.steps[d.id],
                                                           judged.get(d.id), state.steps,
                                                           view.status_of))
                                           for d in ds], asker)

        answer = {"plan": slug, "ready": out(cut["claimable"]), "held": out(cut["held"]),
                  "blocked": out(cut["blocked"]),
                  "progress": queries.progress(view, state.slug, moment).line,
                  "ready_total": totals["claimable"], "held_total": totals["held"],
                  "blocked_total": totals["blocked"], "in_review": out(cut["in_review"]),
                  "in_review_total": totals["in_review"]}
    return answer
