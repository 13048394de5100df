"""What the console's own routes answer: one snapshot built from the API's views."""

from datetime import datetime

from pydantic import Field

from api.schemas import PlanOut, PlanSummaryOut, Schema, SessionOut


class SessionNameOut(Schema):
    name: str | None
    ended: bool


class ConsoleOut(Schema):
    """Everything the console's Now, Plans and Loose ends sections show, at one moment."""

    now: datetime = Field(description="The server's clock: lease countdowns count from it.")
    position: int = Field(description="The log position this snapshot describes; pass it as "
                          "after= to /api/console/events.")
    admin: bool = Field(description="Force-release is enabled (an admin token is set).")
    plans: list[PlanSummaryOut] = Field(description="Every plan, oldest first.")
    details: list[PlanOut] = Field(description="Unfinished plans (and the one asked for) "
                                   "with their steps.")
    sessions: list[SessionOut] = Field(description="Live sessions: those holding steps, "
                                       "then the newest idle ones.")
    idle_hidden: int = Field(description="Idle live sessions left out of `sessions`.")
    names: dict[str, SessionNameOut] = Field(description="Every session the snapshot names.")
