"""What the console's own routes answer: a bounded first read, pages of a plan's steps,
and the changes each message of the live stream carries."""

from datetime import datetime

from pydantic import Field

from planledger.api.schemas import (
    LogPageOut,
    PlanSummaryOut,
    ProgressOut,
    Schema,
    SessionOut,
    StepOut,
)


class SessionNameOut(Schema):
    name: str | None
    ended: bool


class PlanPageOut(PlanSummaryOut):
    """A plan with its constraints and a page of its steps (by number)."""

    constraints: dict[str, str]
    steps: list[StepOut]
    next_offset: int | None = Field(description="Where the next page of steps starts "
                                    "(offset= of /api/console/steps); None: no more.")


class ConsoleOut(Schema):
    """What the console's Now, Plans and Loose ends sections show first, at one moment:
    every plan's progress, the first page of each unfinished plan's steps, the live
    sessions. Its size does not grow with a plan's steps."""

    now: datetime = Field(description="The server's clock: lease countdowns count from it.")
    position: int = Field(description="The log position this snapshot describes; pass it as "
                          "after= to /api/console/events.")
    admin: bool = Field(description="Force-release is enabled (an admin token is set).")
    plans: list[PlanSummaryOut] = Field(description="Every plan, oldest first.")
    details: list[PlanPageOut] = Field(description="Unfinished plans (and the one asked for) "
                                       "with the first page of their steps.")
    sessions: list[SessionOut] = Field(description="Live sessions: those holding steps, "
                                       "then the newest idle ones.")
    idle_hidden: int = Field(description="Idle live sessions left out of `sessions`.")
    live_sessions: int = Field(description="Every live session, shown or not.")
    loose: list[StepOut] = Field(description="Steps claimable because their holder lapsed, "
                                 "by plan and number.")
    loose_hidden: int = Field(description="Lapsed claims left out of `loose`.")
    names: dict[str, SessionNameOut] = Field(description="Every session the snapshot names.")


class StepPageOut(Schema):
    """A page of one plan's steps, by number, with the plan's progress at that moment."""

    now: datetime
    position: int = Field(description="The log position the page describes.")
    plan: str
    progress: ProgressOut
    offset: int
    steps: list[StepOut]
    next_offset: int | None = Field(description="Pass as offset= for the next page; None: "
                                    "no more steps of the kind asked for.")
    names: dict[str, SessionNameOut] = Field(description="Every session the page names.")


class ChangeOut(LogPageOut):
    """A page of the log and what it changed, as the state stands now: the steps the events
    touched (and those whose dependencies they finished), the progress of their plans, the
    sessions they concern. A console applies it in place instead of reading again."""

    now: datetime
    steps: list[StepOut] = Field(description="Every step the events touched, as it is now.")
    plans: list[PlanSummaryOut] = Field(description="The touched plans' progress.")
    stale_plans: list[str] = Field(description="Plans that changed too widely to send step "
                                   "by step (a new plan, a large batch): read their steps "
                                   "again.")
    sessions: list[SessionOut] = Field(description="The sessions the events concern, and the "
                                       "holders of the touched steps (ended ones too).")
    live_sessions: int = Field(description="Every live session, shown or not.")
    names: dict[str, SessionNameOut] = Field(description="Every session the change names.")
