"""Plans: plans_create, plans_list, plans_show."""

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from planledger.api import reads
from planledger.api.mcp.argument_types import (
    After,
    PageLimit,
    Plan,
    ReviewArg,
    SessionArg,
    TokenArg,
)
from planledger.api.mcp.toolbase import Tools
from planledger.api.schemas import (
    REQUIRE_CHECKS_HELP,
    PlanCreatedOut,
    PlanIn,
    PlanOut,
    PlanStepIn,
    PlanSummaryOut,
)

Steps = Annotated[list[PlanStepIn | str] | None, Field(
    description="The steps in order: a title, or {key, title, body, depends_on} where "
    "depends_on names the keys of earlier steps (or ids or references of existing steps); "
    "a key stays the step's name in the plan: `<plan>/<key>`.")]
Constraints = Annotated[dict[str, str] | None, Field(
    description="Named rules every step must honour, e.g. {'rate-limit-not-in-memory': "
    "'use shared storage for the refresh rate limit'}. Agents see them at session_start.")]

RequireChecks = Annotated[bool, Field(description=REQUIRE_CHECKS_HELP)]


class PlanTools(Tools):
    def tools(self) -> list[Callable[..., Any]]:
        return [self.plans_create, self.plans_list, self.plans_show]

    def plans_create(self, ctx: Context[Any, Any], plan: Plan,
                     title: Annotated[str, Field(description="What the plan achieves.")],
                     steps: Steps = None, constraints: Constraints = None,
                     require_checks_pass: RequireChecks = False, review: ReviewArg = None,
                     session_id: SessionArg = None, token: TokenArg = None) -> PlanCreatedOut:
        """Create a plan with its steps and constraints in one go. Steps depend on earlier
        ones by key, so the plan's order of work is explicit: a step is ready only once
        its dependencies are done. Answers each step's id. Refused if the slug is taken,
        or a dependency is unknown or would close a cycle (named)."""
        actor = self.author(ctx, session_id, token)
        listed = [PlanStepIn(key=None, title=s) if isinstance(s, str) else s for s in steps or []]
        made = PlanIn(slug=plan, title=title, constraints=constraints or {}, steps=listed,
                      require_checks_pass=require_checks_pass, review=review)
        return self.service.answer(made.command(actor), PlanCreatedOut)

    def plans_list(self) -> list[PlanSummaryOut]:
        """Every plan with its progress line ("4/6 done, 1 claimable, 0 in flight"),
        oldest first. plans_show gives one plan's steps and constraints."""
        return reads.plans(self.runtime)

    def plans_show(self, plan: Plan, limit: PageLimit = 50, after: After = -1) -> PlanOut:
        """One plan: its constraints, its progress line ("4/6 done, 1 claimable, 0 in
        flight") and its steps with status, holder and blockers, oldest first, a page of
        `limit` at a time: pass the answer's `next_after` as `after` for the next page
        (`more` says how many steps follow)."""
        return reads.plan(self.runtime, plan, limit, after)
