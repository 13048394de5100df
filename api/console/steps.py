"""The console's steps: a plan's steps a page at a time (optionally only those a person
filtered for), a few named steps as they stand now, and the claims that lapsed.

A 20,000-step plan is megabytes as one answer and seconds to build, and every open console
read it again on every change; so the console reads a page, pages further on demand, and
learns of changes step by step. Steps are listed by their number in the plan (`position`,
which `PlanState.steps` keeps in order), so a page is a slice and the next one starts
where it ended.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Literal

from planledger.api import reads
from planledger.api.schemas import StepOut
from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.ledger.domain.state import PlanState
from planledger.projections.view import LedgerView

Show = Literal["all", "unfinished", "held", "claimable", "lapsed", "waiting", "done",
               "dropped"]
SHOWS: tuple[Show, ...] = ("all", "unfinished", "held", "claimable", "lapsed", "waiting",
                           "done", "dropped")
FIRST_PAGE = 50  # steps of each plan in the console's first read
MAX_PAGE = 500
MAX_LOOSE = 100  # lapsed claims listed; the rest are counted


@dataclass(frozen=True)
class StepPage:
    """Steps of one plan from `offset` on; `next_offset` is where the next page starts
    (None when the plan has no more of the steps asked for)."""

    steps: list[StepOut]
    next_offset: int | None


def step_of(view: LedgerView, plan: PlanState, step_id: StepId, moment: datetime) -> StepOut:
    """One step as the plan view shows it at `moment` (the same conversion `views` uses)."""
    state = view.steps[step_id]
    open_or_held = state.status in ("open", "in_progress")
    verdict = view.verdict(step_id, moment) if open_or_held else None
    return reads.steps_out(view, moment, plan, [(plan.steps[step_id], verdict)])[0]


def page_of(view: LedgerView, slug: str, moment: datetime, offset: int = 0,
            limit: int = FIRST_PAGE, show: Show = "all", text: str = "") -> StepPage:
    """The plan's steps numbered `offset` and later that `show` and `text` (a part of the
    title, any case) keep, at most `limit`."""
    plan = view.plans[PlanSlug(slug)]
    wanted = text.casefold()
    found: list[StepOut] = []
    looked = offset
    for step_id in islice(plan.steps, offset, None):
        looked += 1
        if step_id not in view.steps or (wanted and wanted not in
                                         plan.steps[step_id].title.casefold()):
            continue
        step = step_of(view, plan, step_id, moment)
        if _shown(step, show):
            found.append(step)
            if len(found) == limit:
                break
    more = looked < len(plan.steps)
    return StepPage(found, looked if more else None)


def _shown(step: StepOut, show: Show) -> bool:
    if show == "all":
        return True
    if show == "unfinished":
        return step.status in ("open", "in_progress")
    if show in ("done", "dropped"):
        return step.status == show
    if show == "held":
        return step.holder is not None
    if show == "lapsed":
        return step.lapsed_holder is not None
    if show == "claimable":
        return step.claimable
    return step.status in ("open", "in_progress") and not step.claimable and not step.holder


def steps_now(view: LedgerView, step_ids: Iterable[StepId], moment: datetime,
              ) -> list[StepOut]:
    """The named steps as they stand at `moment` (unknown ones left out)."""
    found = []
    for step_id in dict.fromkeys(step_ids):
        state = view.steps.get(step_id)
        plan = view.plans.get(state.plan) if state is not None else None
        if plan is not None and step_id in plan.steps:
            found.append(step_of(view, plan, step_id, moment))
    return found


def lapsed(view: LedgerView, moment: datetime) -> tuple[list[StepOut], int]:
    """Steps claimable because their holder lapsed (lease expired, or session ended), by
    plan and number, at most MAX_LOOSE; and how many more there are."""
    found = [s for s in steps_now(view, _maybe_lapsed(view, moment), moment)
             if s.lapsed_holder is not None]
    plans = {slug: i for i, slug in enumerate(view.plans)}
    found.sort(key=lambda s: (plans.get(PlanSlug(s.plan), 0), s.position))
    return found[:MAX_LOOSE], max(0, len(found) - MAX_LOOSE)


def _maybe_lapsed(view: LedgerView, moment: datetime) -> Iterator[StepId]:
    """Steps in progress whose lease ended by `moment` or whose holder ended its session:
    found from the plans' expiry order, not by judging every step in flight."""
    for index in view.indexes.values():
        yield from index.lapsed_by(moment)
    for session_id in view.ended_holders:
        yield from view.held.get(session_id, ())
