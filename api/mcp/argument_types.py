"""The tools' typed arguments: what each means, for the input schemas agents read.

Ranges the ledger checks (lease length, titles) are left to the ledger, so its message is
the one an agent sees; only ids and slugs are checked here, at the door, as the HTTP API
checks its path parameters, so no odd string ever reaches a database driver.
"""

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from planledger.api.schemas import REVIEW_HELP, LinkIn, Review
from planledger.api.text import PRIORITY_TEXT, check_text
from planledger.ledger.commands import MAX_WAIT_SECONDS
from planledger.ledger.domain.claims import (
    DEFAULT_LEASE_SECONDS,
    MAX_LEASE_SECONDS,
    MIN_LEASE_SECONDS,
)
from planledger.ledger.domain.plans import SLUG_PATTERN
from planledger.ledger.domain.references import STEP_TEXT_PATTERN
from planledger.ledger.domain.relations import MAX_LABELS, MAX_LINKS

ID_PATTERN = r"^[0-9A-Za-z_-]{1,64}$"  # the HTTP API's StepPath/SessionPath pattern
# Free text must be text (api.text): a lone surrogate is refused naming the argument. The
# arguments the tools put into request schemas (api.schemas) are checked there.
Text = AfterValidator(check_text)

StepId = Annotated[str, Field(
    pattern=STEP_TEXT_PATTERN, description="The step: its id (a ULID from tasks_ready or "
    "tasks_list) or its reference, `<plan>#<number>` or `<plan>/<key>` (the `ref` answers "
    "carry); also accepted as `id`.",
    examples=["auth-refresh#5", "01KXMRCX4W2M8YB5Q2Y3V9ZP7N"])]
StepIds = Annotated[list[StepId], Field(
    max_length=200, description="Step ids or references (a list, or one string of them "
    "separated by commas) that must be done or dropped first.")]
StepKey = Annotated[str | None, Field(
    max_length=64, description="The new step's name within its plan, unique there: "
    "`<plan>/<key>` then names it wherever a step id is accepted.", examples=["alert"])]
Plan = Annotated[str, Field(pattern=SLUG_PATTERN.pattern, description="The plan's slug; "
                            "also accepted as `slug`.", examples=["auth-refresh"])]
MaybePlan = Annotated[str | None, Field(
    pattern=SLUG_PATTERN.pattern, description="The plan's slug; may be left out while only "
    "one plan is in motion.", examples=["auth-refresh"])]
SessionArg = Annotated[str | None, Field(
    pattern=ID_PATTERN, description="Act for this session. Leave out to act for the session "
    "started on this connection; a session started elsewhere also needs its token.")]
TokenArg = Annotated[str | None, Text, Field(
    max_length=200, description="The token session_start returned. Needed with a session "
    "started on another connection, and on every call of a client that keeps no connection "
    "(it names its session, so session_id may then be left out). The admin token, where the "
    "server has one, authors plan and step changes as the admin.")]
Lease = Annotated[int | None, Field(
    description=f"Lease length in seconds ({MIN_LEASE_SECONDS}..{MAX_LEASE_SECONDS}); the "
    f"server default ({DEFAULT_LEASE_SECONDS} s unless configured) when left out. On a "
    "heartbeat, the lease ends that long from now or when it already ended, whichever is "
    "later: a heartbeat never shortens a lease.",
    examples=[900])]
Fence = Annotated[int | None, Field(
    description="The fence your claim was granted (tasks_claim returned it). If you lost the "
    "claim meanwhile (your lease lapsed and another session claimed), the call is refused "
    "as stale instead of closing work you no longer hold.")]
Priority = Annotated[int | None, PRIORITY_TEXT, Field(
    ge=0, le=4, description="0 (highest) .. 4 (also read as beads writes it, \"P0\" .. "
    "\"P4\"): ready lists and tasks_claim_next take higher priorities first (then "
    "tasks_ready the oldest, tasks_claim_next the longest chain). Default 2.")]
RelatedStep = Annotated[str | None, Field(
    pattern=STEP_TEXT_PATTERN, description="A step of the same plan, by id or reference "
    "(`<plan>#<number>`, `<plan>/<key>`).", examples=["auth-refresh#3"])]
Labels = Annotated[list[Annotated[str, Text]] | None, Field(
    max_length=MAX_LABELS, description="Free labels, one line each.", examples=[["ui"]])]
Links = Annotated[list[LinkIn] | None, Field(
    max_length=MAX_LINKS, description="Other relations, kept as given (not resolved): "
    "`{kind, target}`, e.g. beads' `related` or `duplicates`.",
    examples=[[{"kind": "related", "target": "bd-a1b2"}]])]
NoteArg = Annotated[str | None, Text, Field(
    max_length=20000, description="A handoff note left with it, for whoever picks the step "
    "up next (they read it in their claim's answer).")]
NoteText = Annotated[str, Text, Field(
    max_length=20000, description="The note: what you tried, what blocked you, where you "
    "stopped.")]
Status = Annotated[Literal["open", "in_progress", "done", "dropped"], Field(
    description="A step's status: open (claimable once its dependencies are closed), "
    "in_progress (held by a session), done or dropped. tasks_update moves the step to it "
    "(in_progress claims, done completes, open releases or reopens, dropped drops).")]
ReadyLimit = Annotated[int, Field(
    ge=1, le=1000, description="At most this many steps of each kind (ready, held, "
    "blocked); the `*_total` fields count them all.")]
PageLimit = Annotated[int, Field(ge=1, le=1000, description="At most this many steps.")]
After = Annotated[int, Field(
    ge=-1, description="Continue after this: the `next_after` of the page before "
    "(-1, the default: from the start).")]
Wait = Annotated[int, Field(
    ge=0, le=MAX_WAIT_SECONDS,
    description=f"When nothing is claimable, wait up to this many seconds (0..{MAX_WAIT_SECONDS}) "
    "for a step to become claimable (a dependency done, a release, a lease lapsing, a step "
    "added) and claim it, instead of polling; agents waiting on one plan are served first "
    "come, first served. 0 (the default) answers at once.", examples=[60])]
ReviewArg = Annotated[Review | None, Field(description=REVIEW_HELP)]
