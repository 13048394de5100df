"""What some tools answer beyond the API's schemas: shapes built from them, for agents."""

from pydantic import Field

from planledger.api.schemas import (
    ClaimNextOut,
    ClaimOut,
    EventOut,
    Schema,
    SessionStartOut,
    StepChangeOut,
    StepOut,
    StepRefOut,
)


class PlanBriefOut(Schema):
    slug: str
    title: str
    progress: str = Field(examples=["4/6 done, 2 claimable, 0 in flight"])
    constraints: dict[str, str] = Field(description="Rules every step of the plan honours.")


class SessionBriefingOut(SessionStartOut):
    token: str | None = Field(description="Your session's secret: pass it as the `token` "
                              "argument on calls from a client that keeps no connection, or "
                              "from another connection. Keep it private.")
    briefing: str = Field(description="The plans in motion, their progress and constraints, "
                          "and how to proceed, in a few lines.")
    plans: list[PlanBriefOut] = Field(description="The plans in motion that need hands first "
                                      "(most claimable steps), at most five.")
    more_plans: int = Field(default=0, description="How many more plans are in motion.")


class TasksOut(Schema):
    steps: list[StepOut]
    history: list[EventOut] | None = Field(None, description="With id: every event about the "
                                           "step (claims, bounces, heartbeats), oldest first.")
    more: int = Field(default=0, description="Steps after this page (0: the last page).")
    next_after: int = Field(default=-1, description="Pass as `after` for the next page.")


PROGRESS = Field(description="The plan's progress line after the call.",
                 examples=["4/6 done, 1 claimable, 1 in flight"])


class ClaimedOut(ClaimOut):
    progress: str = PROGRESS


class ClaimedNextOut(ClaimNextOut):
    progress: str = PROGRESS


class StepAddedOut(StepRefOut):
    plan_created: bool = Field(default=False, description="True when the named plan did not "
                               "exist and this call created it.")
    note: str | None = None


class StepClosedOut(StepChangeOut):
    progress: str = Field(description="The plan's progress line after the change.",
                          examples=["5/6 done, 0 claimable, 1 in flight"])
