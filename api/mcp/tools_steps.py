"""Reading and shaping steps: tasks_ready, tasks_list, tasks_add, tasks_update."""

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from planledger.api import reads
from planledger.api.mcp.argument_types import (
    After,
    Fence,
    Labels,
    Lease,
    Links,
    MaybePlan,
    PageLimit,
    Priority,
    ReadyLimit,
    RelatedStep,
    ReviewArg,
    SessionArg,
    Status,
    StepId,
    StepIds,
    StepKey,
    TokenArg,
)
from planledger.api.mcp.schemas import StepAddedOut, TasksOut
from planledger.api.mcp.toolbase import Tools
from planledger.api.mcp.tools_paths import Paths
from planledger.api.schemas import (
    DependenciesIn,
    PlanCreatedOut,
    ReadyOut,
    StepIn,
    StepOut,
    StepRefOut,
    StepRevisionIn,
)
from planledger.ledger import commands as c
from planledger.ledger.domain.errors import PlanExists, UnknownPlan
from planledger.ledger.domain.ids import SessionId

Title = Annotated[str, Field(description="What the step does, in one line.")]
Body = Annotated[str | None, Field(description="Details: acceptance criteria, files, notes; "
                                  "also accepted as `content` or `text`.")]


class StepTools(Tools):
    def tools(self) -> list[Callable[..., Any]]:
        return [self.tasks_ready, self.tasks_list, self.tasks_add, self.tasks_update]

    def tasks_ready(self, ctx: Context[Any, Any], plan: MaybePlan = None,
                    limit: ReadyLimit = 10, session_id: SessionArg = None,
                    token: TokenArg = None) -> ReadyOut:
        """What you may claim in a plan right now. `ready`: claimable steps, oldest first
        (take the first unless you have a reason not to); a step whose holder's lease
        lapsed is claimable too and names that `lapsed_holder`. `held`: steps other agents
        hold, with `holder` and `expires_at`. `blocked`: steps waiting on the `blockers`
        listed with each. Each list shows its first `limit` steps; `ready_total`,
        `held_total` and `blocked_total` count them all. Call it before you claim and again
        after a bounce. With your session, the listing is recorded so the plan's timeline
        shows what you chose from."""
        actor = self.maybe_actor(ctx, session_id, token)
        return self.service.ready(self.plan_or_only(plan), actor, limit)

    def tasks_list(self, step_id: Annotated[StepId | None, Field(description="One step, with "
                   "its history; also accepted as `id`.")] = None, plan: MaybePlan = None,
                   status: Annotated[Status | None, Field(description="Only steps in this "
                   "status.")] = None, limit: PageLimit = 50, after: After = -1) -> TasksOut:
        """Steps with their status, holder, fence and blockers. With `step_id`: that step and
        its history (every claim, bounce, heartbeat and release, oldest first). Else the
        steps of `plan` (or of every plan), oldest first, optionally only those in
        `status`, a page of `limit` at a time: pass the answer's `next_after` as `after` for
        the next (`more` says how many follow). To choose what to work on, use tasks_ready."""
        if step_id is not None:
            detail = reads.step_detail(self.runtime, step_id)
            step = StepOut.model_validate(detail.model_dump(exclude={"history"}))
            return TasksOut(steps=[step], history=detail.history)
        if plan and status is None:  # one plan's page, judged alone
            shown = reads.plan(self.runtime, plan, limit, after)
            return TasksOut(steps=shown.steps, history=None, more=shown.more,
                            next_after=shown.next_after)
        slugs = [plan] if plan else [p.slug for p in reads.plans(self.runtime)]
        steps = [s for slug in slugs for s in reads.plan(self.runtime, slug).steps
                 if status is None or s.status == status]
        page = steps[after + 1:after + 1 + limit]  # `after`: the index of the last one shown
        return TasksOut(steps=page, history=None, more=max(0, len(steps) - after - 1 - limit),
                        next_after=after + len(page))

    def tasks_add(self, ctx: Context[Any, Any], title: Title, body: Body = None,
                  plan: MaybePlan = None, depends_on: StepIds | None = None,
                  paths: Paths = None, priority: Priority = None, review: ReviewArg = None,
                  key: StepKey = None,
                  parent: Annotated[RelatedStep, Field(description="The step it belongs "
                                    "under (an epic), by id or reference: a parent is "
                                    "claimable only once none of its children is open, and "
                                    "closes itself once all it waits on is done (unless it "
                                    "requires a review); it must be open.")] = None,
                  discovered_from: Annotated[RelatedStep, Field(description="The step you "
                                             "found this work while working on, by id or "
                                             "reference (shown in its history and the "
                                             "timeline).")] = None,
                  labels: Labels = None, links: Links = None,
                  session_id: SessionArg = None, token: TokenArg = None) -> StepAddedOut:
        """Add a step to a plan (work you found that the plan lacks: say where with
        `discovered_from`). `depends_on` lists the steps (ids or references) that must be
        done (or dropped) before it is ready; `key` names the new step within its plan
        (`<plan>/<key>`); `parent` groups it under an epic. A dependency that is unknown,
        on the step itself or that would close a cycle is refused by name. A `plan` that
        does not exist yet is created (titled by its slug), and the answer says so
        (`plan_created`), so a misspelt plan name shows at once. `paths`: the files the
        step will touch, reserved for whoever claims it (see tasks_claim)."""
        actor = self.author(ctx, session_id, token)
        step = StepIn(title=title, body=body or "", depends_on=depends_on or [],
                      paths=paths or [], priority=priority, review=review, key=key or None,
                      parent=parent, discovered_from=discovered_from, labels=labels or [],
                      links=links or [])
        slug = self.plan_or_only(plan)
        add = step.command(slug, actor)
        if plan is not None and not self._exists(slug):
            try:
                return self._with_its_plan(add)
            except PlanExists:
                pass  # another agent created it meanwhile: the step goes into theirs
        return StepAddedOut(**dict(self.service.answer(add, StepRefOut)))

    def _exists(self, slug: str) -> bool:
        try:
            reads.plan_progress(self.runtime, slug)
        except UnknownPlan:
            return False
        return True

    def _with_its_plan(self, add: c.AddStep) -> StepAddedOut:
        """The step and the plan it names, created together (titled by the slug): a step
        that is refused leaves no plan behind."""
        new = c.NewStep(add.title, add.body, add.depends_on, add.key, paths=add.paths,
                        priority=add.priority, parent=add.parent,
                        discovered_from=add.discovered_from, labels=add.labels,
                        links=add.links, done=add.done, note=add.note)
        made = self.service.answer(c.CreatePlan(add.plan, add.plan, add.actor, steps=(new,)),
                                   PlanCreatedOut)
        note = (f'plan "{add.plan}" did not exist: created it (titled "{add.plan}"); check '
                "the name if you meant another plan (plans_list)")
        return StepAddedOut(**dict(made.steps[0]), plan_created=True, note=note)

    def tasks_update(self, ctx: Context[Any, Any], step_id: StepId, status: Status | None = None,
                     title: Annotated[str | None, Field(description="A new title.")] = None,
                     body: Body = None, add_depends_on: StepIds | None = None,
                     fence: Fence = None, lease_seconds: Lease = None,
                     paths: Annotated[Paths, Field(description="All the paths the step "
                                                   "touches, anew (`[]`: none).")] = None,
                     priority: Priority = None,
                     session_id: SessionArg = None, token: TokenArg = None) -> StepOut:
        """Change a step: revise `title`/`body`/`priority`, add dependencies
        (`add_depends_on`), and/or move its `status`: in_progress claims it (as
        tasks_claim), done completes it (as tasks_complete; you must hold it), dropped drops
        it (as tasks_drop), open releases your claim or reopens a done or dropped step.
        Applied in that order: revision, dependencies, status; each refusal reads as that
        tool's would. Answers the step."""
        actor = self.author(ctx, session_id, token)
        step_id = self.runtime.ledger.resolve_step(step_id)  # read once: all steps agree
        if title is not None or body is not None or paths is not None or priority is not None:
            revision = StepRevisionIn(title=title, body=body, paths=paths, priority=priority)
            self.service.execute(revision.command(step_id, actor))
        if add_depends_on:
            self.service.execute(DependenciesIn(depends_on=add_depends_on).command(step_id, actor))
        if status is not None:
            self._move(ctx, step_id, status, fence, lease_seconds, (session_id, token))
        detail = reads.step_detail(self.runtime, step_id)
        return StepOut.model_validate(detail.model_dump(exclude={"history"}))

    def _move(self, ctx: Context[Any, Any], step_id: str, status: Status, fence: int | None,
              lease: int | None, who: tuple[str | None, str | None]) -> None:
        def actor() -> SessionId:
            return self.actor(ctx, *who)

        if status == "dropped":
            self.service.execute(c.Drop(step_id, self.author(ctx, *who), fence))
        elif status == "in_progress":
            self.service.execute(c.Claim(step_id, actor(), lease))
        elif status == "done":
            self.service.execute(c.Complete(step_id, actor(), fence))
        elif self.runtime.ledger.step(step_id)[0].status != "in_progress":
            # Closed: reopen it. Open already: refused as HTTP /reopen refuses it, saying
            # it is open (not "claim it first", as a release of nobody's claim would).
            self.service.execute(c.Reopen(step_id, self.author(ctx, *who)))
        else:
            self.service.execute(c.Release(step_id, actor(), fence))
