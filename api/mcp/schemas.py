"""What some tools answer beyond the API's schemas: shapes built from them, for agents."""

from pydantic import Field

from planledger.api.schemas import EventOut, Schema, SessionStartOut, StepChangeOut, StepOut


class PlanBriefOut(Schema):
    slug: str
    title: str
    progress: str = Field(examples=["4/6 done, 2 claimable, 0 in flight"])
    constraints: dict[str, str] = Field(description="Rules every step of the plan honours.")


class SessionBriefingOut(SessionStartOut):
    briefing: str = Field(description="The plans in motion, their progress and constraints, "
                          "and how to proceed, in a few lines.")
    plans: list[PlanBriefOut] = Field(description="The plans in motion (steps not all closed).")


class TasksOut(Schema):
    steps: list[StepOut]
    history: list[EventOut] | None = Field(None, description="With id: every event about the "
                                           "step (claims, bounces, heartbeats), oldest first.")


class StepClosedOut(StepChangeOut):
    progress: str = Field(description="The plan's progress line after the change.",
                          examples=["5/6 done, 0 claimable, 1 in flight"])
