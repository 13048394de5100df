"""Path reservations over MCP: the `paths` argument of tasks_add, tasks_update and
tasks_claim, and paths_check (who holds what)."""

from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from planledger.api import path_reads
from planledger.api.mcp.toolbase import Tools
from planledger.api.schemas import PATHS_HELP, PathIn, PathsCheckOut
from planledger.ledger.domain.paths import MAX_PATHS

Paths = Annotated[list[str | PathIn] | None, Field(
    max_length=MAX_PATHS, description=PATHS_HELP, examples=[["internal/auth/**", "auth.go"]])]
ClaimPaths = Annotated[list[str | PathIn] | None, Field(
    max_length=MAX_PATHS, description="More paths to reserve with this claim, beside the "
    "step's own (on your heartbeat: added to what you hold). " + PATHS_HELP)]
Patterns = Annotated[list[str] | None, Field(
    max_length=MAX_PATHS, description="Globs (as in `paths`): which live reservations do "
    "they overlap? Leave out (with `files`) to list every live reservation.",
    examples=[["internal/auth/**"]])]
Files = Annotated[list[str] | None, Field(
    max_length=path_reads.MAX_FILES, description="File paths from the repository root, taken "
    "literally: which live reservations cover them?", examples=[["internal/auth/token.go"]])]


class PathTools(Tools):
    def tools(self) -> list[Callable[..., Any]]:
        return [self.paths_check]

    def paths_check(self, paths: Patterns = None, files: Files = None,
                    exclusive_only: Annotated[bool, Field(description="Leave shared "
                                              "reservations out.")] = False,
                    ) -> PathsCheckOut:
        """Who holds what: the live path reservations (a claim's paths, held with its lease
        and fence) that `paths` overlap or `files` fall under, each with its `holder`, the
        holder's step, until when, and the reserved `patterns` met; every live reservation
        when neither is given. Ask before editing files outside your step's declared paths:
        if another session holds them exclusively, coordinate (or pick other work) rather
        than edit; a commit touching them is refused by the commit guard."""
        return path_reads.check(self.runtime, paths or [], files or [], exclusive_only)
