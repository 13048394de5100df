"""Request and response schemas of the API (HTTP, MCP, CLI --json); separate from events.

Field names are the contract with clients: change them only additively.
"""

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from planledger.api.text import PRIORITY_TEXT, TEXT_FIRST, check_text
from planledger.ledger import commands as c
from planledger.ledger.domain import evidence
from planledger.ledger.domain.closing import HANDED_CHARACTERS, HANDED_NOTES
from planledger.ledger.domain.paths import PathSpec
from planledger.ledger.domain.relations import MAX_LABELS, MAX_LINKS
from planledger.ledger.domain.state import Status
from planledger.projections.results import Progress
from planledger.projections.timeline_entries import Entry, Lane

SID = "01KXP8FEJQ6R5Z5NMVZ7082X5A"
STEP = "01KXMRCX4W2M8YB5Q2Y3V9ZP7N"


class Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


# --- requests ------------------------------------------------------------------------


class RequestSchema(Schema):
    """What a client sends: every string in it must be text (api.text), whatever the
    field, so no route, tool or command can pass a lone surrogate on to the store."""

    @field_validator("*")
    @classmethod
    def _text_only(cls, value: Any) -> Any:
        return check_text(value)


class SessionStartIn(RequestSchema):
    name: str | None = Field(None, description="A label for people, e.g. 'agent A'.",
                             examples=["agent A"])
    cwd: str | None = Field(default=None, description="The directory the agent works in.",
                            examples=["/home/dev/myapp"])
    source: str | None = Field(default=None, description="The agent's client.",
                               examples=["claude-code"])
    model: str | None = Field(default=None, description="The agent's model.")

    def command(self) -> c.StartSession:
        return c.StartSession(self.name, cwd=self.cwd, source=self.source, model=self.model)


class SessionEndIn(RequestSchema):
    findings: str | None = Field(default=None, description="What the agent reports as it stops: "
                                 "kept on its timeline.")


class PathIn(RequestSchema):
    """A path a step touches: a glob from the repository root, reserved while the step is
    claimed (exclusively unless `mode` is shared). See docs/paths.md."""

    pattern: str = Field(description="A glob from the repository root.",
                         examples=["internal/auth/**"])
    mode: Annotated[Literal["exclusive", "shared"], TEXT_FIRST] = Field(
        default="exclusive", description="exclusive (the default): no other claim may "
        "reserve an overlapping path; shared: other shared reservations may overlap.")


PATHS_HELP = ("Globs from the repository root the step touches (`*`, `?`, `**`; a plain name "
              "covers what lies beneath it), reserved while it is claimed: a string is "
              'exclusive, or give {"pattern": ..., "mode": "shared"}.')
PathsIn = list[str | PathIn]


def path_specs(paths: PathsIn | None) -> tuple[PathSpec, ...]:
    """Paths as the ledger takes them (checked there, naming the field)."""
    return tuple(PathSpec(p) if isinstance(p, str) else PathSpec(p.pattern, p.mode)
                 for p in paths or ())


PRIORITY_HELP = ("0 (highest) .. 4 (also read as beads writes it, \"P0\" .. \"P4\"); ready "
                 "lists and claim-next take higher priorities first (then ready lists the "
                 "oldest, claim-next the longest chain). Default 2.")
PriorityIn = Annotated[int | None, PRIORITY_TEXT]


class LinkIn(RequestSchema):
    kind: str = Field(description="The relation, e.g. beads' `related` or `duplicates`.",
                      examples=["related"])
    target: str = Field(description="What it relates to, kept as given (not resolved).",
                        examples=["bd-a1b2"])


class RelationsIn(RequestSchema):
    """A new step's relations (ledger.domain.relations) and how it arrives."""

    parent: str | None = Field(default=None, description="The step it belongs under (an "
                               "epic) in the same plan: a key of an earlier step of this "
                               "request, or an id or reference; it must be open. A parent is "
                               "claimable only once none of its children is open, and "
                               "closes itself once all it waits on (children and "
                               "dependencies) is done, unless it requires a review.",
                               examples=["epic"])
    discovered_from: str | None = Field(default=None, description="The step of the same plan "
                                        "it was found while working on (same forms as "
                                        "`parent`).", examples=["auth-refresh#3"])
    labels: list[str] = Field(default_factory=list, max_length=MAX_LABELS,
                              description="Free labels, one line each.", examples=[["ui"]])
    links: list[LinkIn] = Field(default_factory=list, max_length=MAX_LINKS,
                                description="Other relations, kept as given.")
    done: bool = Field(default=False, description="It arrives done (finished work brought "
                       "over): closed in the same write, with no claim.")
    note: str | None = Field(default=None, description="A handoff note left on it, handed "
                             "to its first claimer.")

    def relations(self) -> dict[str, Any]:
        """The relation arguments of NewStep and AddStep."""
        return {"parent": self.parent or None,
                "discovered_from": self.discovered_from or None,
                "labels": tuple(self.labels),
                "links": tuple(c.Link(k.kind, k.target) for k in self.links),
                "done": self.done, "note": self.note}


REVIEW_HELP = ('"required": each completion waits in review until a session of another key '
               "approves it (four eyes); until then its dependents stay blocked. Omitted: "
               "no review (a plan's setting covers all its steps).")
Review = Annotated[Literal["required"], TEXT_FIRST]


REQUIRE_CHECKS_HELP = ("Refuse a completion whose evidence reports a failed check, naming "
                       "it (a planner's setting; default false: a failed check is kept as "
                       "reported).")


class PlanStepIn(RelationsIn):
    key: str | None = Field(None, description="The step's name within its plan: later "
                            "steps of this request use it in depends_on, and `<plan>/<key>` "
                            "names the step wherever a step id is accepted. 1-64 letters, "
                            "digits, '.', '_' or '-'; unique within the plan.",
                            examples=["s5"])
    title: str = Field(description="What the step does, in one line.",
                       examples=["Rate-limit POST /auth/refresh (per-IP and per-family)"])
    body: str = Field(default="", description="Details: acceptance criteria, files, notes.")
    depends_on: list[str] = Field(default_factory=list, description="Keys of earlier steps "
                                  "in this request, or ids or references of existing steps.",
                                  examples=[["s4"]])
    paths: PathsIn = Field(default_factory=list, description=PATHS_HELP,
                           examples=[["internal/auth/**"]])
    priority: PriorityIn = Field(default=None, ge=0, le=4, description=PRIORITY_HELP,
                                 examples=[1])
    review: Review | None = Field(default=None, description=REVIEW_HELP)


class PlanIn(RequestSchema):
    slug: str = Field(examples=["auth-refresh"])
    title: str = Field(examples=["Refresh-token rotation"])
    constraints: dict[str, str] = Field(default_factory=dict, examples=[{
        "rate-limit-not-in-memory": "use shared storage for the refresh rate limit"}])
    steps: list[PlanStepIn] = Field(default_factory=list)
    require_checks_pass: bool = Field(default=False, description=REQUIRE_CHECKS_HELP)
    review: Review | None = Field(default=None, description=REVIEW_HELP)

    def command(self, actor: str) -> c.CreatePlan:
        return c.CreatePlan(self.slug, self.title, actor, tuple(self.constraints.items()),
                            tuple(c.NewStep(s.title, s.body, tuple(s.depends_on), s.key,
                                            path_specs(s.paths), s.priority,
                                            s.review == "required", **s.relations())
                                  for s in self.steps), self.require_checks_pass,
                            self.review == "required")


class StepIn(RelationsIn):
    title: str = Field(examples=["Emit metrics and an alert for refresh-reuse revocations"])
    body: str = ""
    depends_on: list[str] = Field(default_factory=list, description="Ids or references "
                                  "(`<plan>#<number>`, `<plan>/<key>`) of steps of the plan.",
                                  examples=[[STEP]])
    paths: PathsIn = Field(default_factory=list, description=PATHS_HELP)
    priority: PriorityIn = Field(default=None, ge=0, le=4, description=PRIORITY_HELP,
                                 examples=[1])
    review: Review | None = Field(default=None, description=REVIEW_HELP)
    key: str | None = Field(default=None, description="The step's name within its plan "
                            "(`<plan>/<key>` names it); unique there.", examples=["alert"])

    def command(self, plan: str, actor: str) -> c.AddStep:
        return c.AddStep(plan, self.title, actor, self.body, tuple(self.depends_on),
                         path_specs(self.paths), self.priority, self.review == "required",
                         self.key, **self.relations())


class StepRevisionIn(RequestSchema):
    title: str | None = None
    body: str | None = None
    paths: PathsIn | None = Field(default=None, description=PATHS_HELP + " All of them, replacing "
                                  "the step's (`[]` declares none); a claim holding the step "
                                  "keeps what it reserved until it ends.")
    priority: PriorityIn = Field(default=None, ge=0, le=4, description=PRIORITY_HELP,
                                 examples=[1])

    def command(self, step_id: str, actor: str) -> c.ReviseStep:
        return c.ReviseStep(step_id, actor, self.title, self.body,
                            None if self.paths is None else path_specs(self.paths),
                            self.priority)


class DependenciesIn(RequestSchema):
    depends_on: list[str] = Field(examples=[[STEP]])

    def command(self, step_id: str, actor: str) -> c.DeclareDependencies:
        return c.DeclareDependencies(step_id, tuple(self.depends_on), actor)


class ClaimIn(RequestSchema):
    lease_seconds: int | None = Field(None, description="Lease length; the server default "
                                      "(900 s unless configured) when omitted.", examples=[900])


class ClaimStepIn(ClaimIn):
    review: bool = Field(False, description="Take this step, which is in review, to review "
                         "it (not your own work, nor your key's), rather than to work on it.")
    paths: PathsIn = Field(default_factory=list, description="More paths to reserve with "
                           "this claim, beside the step's own (a holder's re-claim adds them "
                           "to what it holds). " + PATHS_HELP)


class ClaimNextIn(ClaimIn):
    review: bool = Field(False, description="Take a step in review to review instead: one "
                         "that is not your own work (nor your key's), by priority then age; "
                         "two reviewers never get the same one.")
    wait_seconds: int = Field(0, ge=0, le=c.MAX_WAIT_SECONDS, description="When nothing is "
                              "claimable, wait up to this many seconds for a step to become "
                              "claimable (a dependency done, a release, a lease lapsing, a "
                              "step added) and claim it; waiters on one plan are served first "
                              "come, first served. 0 (the default) answers at once.",
                              examples=[60])


class FenceIn(RequestSchema):
    fence: int | None = Field(None, description="The fence your claim was granted; a stale "
                              "one is refused, so a paused agent cannot close work it lost.",
                              examples=[1])
    note: str | None = Field(default=None, description="A handoff note left with it: the "
                             "next claimer of the step reads it in its claim's answer.",
                             examples=["blocked on the schema migration; tried X"])


class CheckIn(RequestSchema):
    """A check the holder ran on the work (tests, lint, a build), as it reports it."""

    name: str = Field(description="The check's name, one line.", examples=["tests"])
    result: Annotated[Literal["pass", "fail"], TEXT_FIRST] = Field(description="pass or fail.")
    command: str | None = Field(default=None, description="The command that ran it.",
                                examples=["pytest -q"])
    summary: str | None = Field(default=None, description="What it said, in short.",
                                examples=["383 passed"])


class EvidenceIn(RequestSchema):
    """What shows the work done: the commits, the change request, the checks. Kept in the
    completion's event, shown in the step's history and the timeline."""

    commits: list[str] = Field(default_factory=list, max_length=evidence.MAX_COMMITS,
                               description="The shas of the commits that did the work "
                               "(7 to 64 hex digits each).",
                               examples=[["9fceb02d0ae598e95dc970b74767f19372d61af8"]])
    branch: str | None = Field(default=None, description="The branch the commits are on.",
                               examples=["feature/rate-limit"])
    pr: str | None = Field(default=None, description="The change request (pull or merge "
                           "request): an http(s) URL.",
                           examples=["https://github.com/example/app/pull/31"])
    checks: list[CheckIn] = Field(default_factory=list, max_length=evidence.MAX_CHECKS,
                                  description="The checks run on the work. A failed one "
                                  "refuses the completion only where the plan requires "
                                  "every check to pass.")

    def value(self) -> evidence.Evidence:
        """The evidence as the ledger takes it (checked there, naming the field)."""
        return evidence.Evidence(
            tuple(self.commits), self.branch, self.pr,
            tuple(evidence.Check(c.name, c.result, c.command, c.summary)
                  for c in self.checks))


def evidence_of(given: EvidenceIn | None) -> evidence.Evidence | None:
    return given.value() if given is not None else None


class CompleteIn(FenceIn):
    evidence: EvidenceIn | None = Field(default=None, description="What shows the work "
                                        "done: commits, branch, change request, checks.")
    claim_next: bool = Field(default=False, description="Then claim the plan's next step "
                             "for you, as claim-next does (answered in `next`).")
    lease_seconds: int | None = Field(None, description="With claim_next: the next claim's "
                                      "lease; the server default when omitted.")


class NoteIn(RequestSchema):
    text: str = Field(description="The note, for whoever picks the step up next.")


class ReviewIn(RequestSchema):
    verdict: Annotated[Literal["approve", "reject"], TEXT_FIRST] = Field(
        description="approve: the step is done and its dependents unblock; reject: it opens "
        "again for its next claimer.")
    note: str | None = Field(default=None, description="What the reviewer found: handed to "
                             "the step's next claimer, as a handoff note is.")

    def command(self, step_id: str, actor: str) -> c.Review:
        return c.Review(step_id, actor, self.verdict, self.note)


# --- responses -----------------------------------------------------------------------


WARNINGS: Any = Field(default_factory=list, exclude_if=lambda said: not said,
                      description="What the paths should make you check: a pattern such as "
                      "`**` reserves the whole repository, so every claim whose paths meet "
                      "it bounces (present when there is any).")


class StepAnswer(Schema):
    """An answer about one step: `step_id`, also as `id` (what agents used to other task
    queues read)."""

    step_id: str = Field(examples=[STEP])
    id: str = Field(default="", description="The step id again (`step_id`).")
    ref: str | None = Field(default=None, description="The step's reference within its "
                            "plan, `<plan>#<number>`: accepted wherever a step id is "
                            "(as is `<plan>/<key>` for a step with a key).",
                            examples=["auth-refresh#5"])

    @model_validator(mode="before")
    @classmethod
    def _id_is_step_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and "step_id" in data:
            data = {**data, "id": data["step_id"]}
        return data


class SessionStartedOut(Schema):
    session_id: str = Field(examples=[SID])
    name: str | None = None
    started_at: datetime
    role: str = Field("planner", description="What the session may do: the role of the key "
                      "it was started with (reader < worker < planner < admin).")
    key: str | None = Field(None, description="The name of the access key it was started "
                            "with (null: the store held no key).")


Role = Annotated[Literal["reader", "worker", "planner", "admin"], TEXT_FIRST]


class KeyOut(Schema):
    """An access key as the store keeps it: never the key itself, only its name and role."""

    name: str = Field(examples=["ci-bot"])
    role: Role
    live: bool
    issued_at: datetime
    issued_by: str | None = None
    revoked_at: datetime | None = None
    revoked_by: str | None = None


class KeyIssuedOut(KeyOut):
    key: str | None = Field(description="The key: send it as `Authorization: Bearer <key>`. "
                            "Shown once, here; the store keeps only a hash.")


class KeyCreateIn(RequestSchema):
    name: str = Field(description="1-64 letters, digits, '.', '_', '@' or '-' (checked by the "
                      "ledger).", examples=["ci-bot"])
    role: Role


class KeysOut(Schema):
    keys: list[KeyOut]


TOKEN_ONLY_FIRST = ("this answers a retry (the same Idempotency-Key): the session's token is "
                    "only ever in the first answer; if that was lost, start a new session")


class SessionStartOut(SessionStartedOut):
    token: str | None = Field(description="Send as `Authorization: Bearer <token>` on every "
                              "call acting for this session. Keep it secret. Null when "
                              "`replayed`: only the first answer carries it.")
    replayed: bool = Field(False, description="True when this answers a retry with the same "
                           "Idempotency-Key: the session is the one first started, and the "
                           "token is withheld (anyone who repeats a key could ask for it).")
    note: str | None = Field(None, examples=[TOKEN_ONLY_FIRST])


class PathOut(Schema):
    pattern: str
    mode: Literal["exclusive", "shared"]


def paths_out(paths: Iterable[PathSpec]) -> list[PathOut]:
    return [PathOut(pattern=p.pattern, mode=p.mode) for p in paths]


class HeldOut(Schema):
    step_id: str
    ref: str | None = Field(default=None, description="The step's reference in its plan "
                            "(`<plan>#<number>`).", examples=["auth-refresh#5"])
    plan: str
    title: str
    fence: int
    expires_at: datetime | None
    seconds_left: float | None
    lease_seconds: int | None = Field(None, description="The lease's full length (a "
                                      "countdown's starting point).")
    paths: list[PathOut] = Field(default_factory=list, description="The paths the claim "
                                 "holds reserved.")


class SessionOut(Schema):
    session_id: str
    name: str | None
    started_at: datetime
    ended: bool
    holds: list[HeldOut]
    cwd: str | None = Field(default=None, description="Where the agent said it works.")
    source: str | None = Field(default=None, description="Its client, as it said.")
    model: str | None = Field(default=None, description="Its model, as it said.")
    role: str = Field("planner", description="What it may do: its key's role.")
    key: str | None = Field(None, description="The access key it was started with.")


class SessionEndOut(Schema):
    session_id: str
    released: list[str] = Field(description="Steps the session held, each released.")


class LinkOut(Schema):
    kind: str = Field(examples=["related"])
    target: str = Field(description="As given (not resolved).", examples=["bd-a1b2"])


class StepRefOut(StepAnswer):
    key: str | None = Field(default=None, description="The step's key within its plan "
                            "(`<plan>/<key>` names it).")
    plan: str
    title: str
    priority: int = Field(default=2, description="0 (highest) .. 4.")
    depends_on: list[str] = Field(default_factory=list)
    paths: list[PathOut] = Field(default_factory=list)
    warnings: list[str] = WARNINGS
    parent: str | None = Field(None, exclude_if=lambda parent: parent is None,
                               description="The step it belongs under, by id (present when "
                               "it has one).")
    discovered_from: str | None = Field(None, exclude_if=lambda origin: origin is None,
                                        description="The step it was found while working "
                                        "on, by id (present when it has one).")
    labels: list[str] = Field(default_factory=list, exclude_if=lambda labels: not labels)
    links: list[LinkOut] = Field(default_factory=list, exclude_if=lambda links: not links)


class PlanCreatedOut(Schema):
    slug: str
    title: str
    constraints: dict[str, str]
    steps: list[StepRefOut]
    require_checks_pass: bool = Field(default=False, description=REQUIRE_CHECKS_HELP)
    review_required: bool = Field(default=False, description=REVIEW_HELP)
    warnings: list[str] = Field(default_factory=list, exclude_if=lambda said: not said,
                                description="What the steps' paths should make you check, "
                                "each naming its step: a pattern such as `**` reserves the "
                                "whole repository (present when there is any).")


ProgressOut = Progress  # answered as the read model computes it: one type, not a mirror


class PlanSummaryOut(Schema):
    slug: str
    title: str
    created_at: datetime
    progress: ProgressOut


class BlockerOut(Schema):
    step_id: str
    title: str
    status: str
    ref: str | None = Field(default=None, description="The blocker's reference "
                            "(`<plan>#<number>`).")


class CollisionOut(Schema):
    """Another session's live reservation that paths meet."""

    holder: str = Field(examples=[SID])
    holder_name: str | None = None
    step_id: str = Field(description="The holder's step.")
    ref: str | None = Field(default=None, description="The holder's step's reference.")
    title: str
    patterns: list[str] = Field(description="The holder's patterns that are met.",
                                examples=[["internal/auth/**"]])


class ReservationOut(Schema):
    """A live reservation: a claim's paths, held with its lease and fence."""

    step_id: str
    ref: str | None = Field(default=None, description="The step's reference (`<plan>#<n>`).")
    plan: str
    title: str
    holder: str
    holder_name: str | None = None
    fence: int
    expires_at: datetime
    paths: list[PathOut]
    patterns: list[str] = Field(default_factory=list, description="In a check: the "
                                "reserved patterns the asked paths meet.")


class PathsCheckIn(RequestSchema):
    paths: list[str] = Field(default_factory=list, max_length=100, description="Globs: which "
                             "live reservations do they overlap?", examples=[["internal/**"]])
    files: list[str] = Field(default_factory=list, max_length=10_000, description="File "
                             "paths from the repository root, taken literally: which live "
                             "reservations cover them? (the commit guard's question)")
    exclusive_only: bool = Field(default=False, description="Leave shared reservations out.")
    but: str | None = Field(default=None, description="Leave this session's reservations out.")


class PathsCheckOut(Schema):
    reserved: list[ReservationOut] = Field(description="Live reservations the asked paths "
                                           "meet (every live one when none are asked), "
                                           "soonest expiry first.")
    message: str = Field(examples=['"internal/auth/**" is held by "01K…" (agent B, step '
                                   '01K… "Rate-limit POST /auth/refresh")'])


class StepOut(StepAnswer):
    plan: str
    position: int
    key: str | None = Field(default=None, exclude_if=lambda key: key is None,
                            description="The step's key within its plan (present when it "
                            "has one: `<plan>/<key>` names it).")
    title: str
    priority: int = Field(default=2, description="0 (highest) .. 4.")
    body: str = Field(default="", description="What the step asks, beyond its title.")
    depends_on: list[str]
    status: Status
    claimable: bool = Field(description="A claim would be granted now.")
    holder: str | None = Field(None, description="The live holder, if any.")
    holder_name: str | None = Field(None, exclude_if=lambda name: name is None,
                                    description="The live holder's session name (present "
                                    "when it has one).")
    lapsed_holder: str | None = Field(None, description="Whose lease lapsed, if claimable "
                                      "after a lapse.")
    fence: int
    expires_at: datetime | None = None
    blockers: list[BlockerOut] = Field(default_factory=list)
    paths: list[PathOut] = Field(default_factory=list, description="The paths the step "
                                 "declares it will touch.")
    reserved: list[PathOut] = Field(default_factory=list, description="The paths its live "
                                    "claim holds reserved (the step's and the claim's own).")
    collides_with: list[CollisionOut] = Field(default_factory=list, description="Other "
                                              "sessions' live reservations its paths meet: a "
                                              "claim now would bounce.")
    review_required: bool = Field(default=False, exclude_if=lambda required: not required,
                                  description="Its completion waits for a review (present "
                                  "when true).")
    author: str | None = Field(None, exclude_if=lambda author: author is None,
                               description="In review: the session that finished the work "
                               "(present while in review).")
    reviewer: str | None = Field(None, exclude_if=lambda reviewer: reviewer is None,
                                 description="In review: the session reviewing it now "
                                 "(present while one holds it).")
    parent: str | None = Field(None, exclude_if=lambda parent: parent is None,
                               description="The step it belongs under (an epic), by id "
                               "(present when it has one).")
    parent_ref: str | None = Field(None, exclude_if=lambda ref: ref is None,
                                   description="The parent's reference, `<plan>#<number>`.")
    discovered_from: str | None = Field(None, exclude_if=lambda origin: origin is None,
                                        description="The step it was found while working "
                                        "on, by id (present when it has one).")
    discovered_from_ref: str | None = Field(None, exclude_if=lambda ref: ref is None,
                                            description="That step's reference.")
    labels: list[str] = Field(default_factory=list, exclude_if=lambda labels: not labels,
                              description="Free labels (present when it has any).")
    links: list[LinkOut] = Field(default_factory=list, exclude_if=lambda links: not links,
                                 description="Other relations, kept as given (present when "
                                 "it has any).")
    children: str | None = Field(None, exclude_if=lambda line: line is None,
                                 description='A parent\'s roll-up of its children, e.g. "2/5 '
                                 'children done"; it is claimable only once none is open '
                                 "(present when it has children).",
                                 examples=["2/5 children done"])


class PlanOut(PlanSummaryOut):
    constraints: dict[str, str]
    require_checks_pass: bool = Field(default=False, description=REQUIRE_CHECKS_HELP)
    review_required: bool = Field(default=False, description=REVIEW_HELP)
    steps: list[StepOut]
    more: int = Field(default=0, description="Steps after this page (0: the last page).")
    next_after: int = Field(default=-1, description="Pass as `after` for the next page: "
                            "the position of the last step shown.")


class EventOut(Schema):
    position: int | None = Field(None, description="Place in the whole log (for after=).")
    stream: str
    version: int
    type: str = Field(examples=["StepClaimed"])
    at: datetime
    session_id: str | None
    actor: str | None = Field(None, description="Who made the write: a session id, `admin`, "
                              "`key:<name>` (an access key used without a session), or "
                              "`local:<OS user>` (the operator of an embedded store); events "
                              "from before authors were recorded name their session.")
    key: str | None = Field(None, description="The access key behind the write: the key its "
                            "session was started with, or the key that made it (null: none).")
    data: dict[str, Any]


class StepDetailOut(StepOut):
    history: list[EventOut]


class ReadyOut(Schema):
    plan: str
    ready: list[StepOut] = Field(description="Claimable now, by priority (0 first), then "
                                 "oldest first.")
    held: list[StepOut]
    blocked: list[StepOut] = Field(description="Waiting on the steps named in blockers.")
    progress: str = Field(description="The plan's progress line.",
                          examples=["4/6 done, 1 claimable, 1 in flight"])
    ready_total: int = Field(default=0, description="Claimable steps in all (the list may "
                             "show only the first few).")
    held_total: int = Field(default=0, description="Held steps in all.")
    blocked_total: int = Field(default=0, description="Blocked steps in all.")
    in_review: list[StepOut] = Field(default_factory=list, description="Finished by their "
                                     "holders, waiting for a review (not claimable: "
                                     "claim_next with review hands one to a reviewer).")
    in_review_total: int = Field(default=0, description="Steps in review in all.")


class NoteOut(Schema):
    by: str | None = Field(description="Who left it: a session, the admin or the local "
                           "operator.")
    at: datetime
    text: str
    after: str | None = Field(default=None, description="The close it came with: release, "
                              "drop or complete.")


class NoteAddedOut(StepAnswer):
    plan: str
    note: NoteOut


class ClaimOut(StepAnswer):
    plan: str
    title: str
    status: Literal["in_progress", "in_review"] = Field(
        default="in_progress", description="A held step's status: in_review when you hold it "
        "to review it.")
    holder: str = Field(examples=[SID], description="The session that holds the step: yours.")
    fence: int = Field(examples=[1])
    expires_at: datetime
    renewed: bool = Field(description="True for a heartbeat of the holder's own claim.")
    took_over_from: str | None = Field(None, description="The lapsed holder this grant "
                                       "replaced, if any.")
    paths: list[PathOut] = Field(default_factory=list, description="The paths this claim "
                                 "holds reserved (the step's and its own; a heartbeat "
                                 "answers all that the claim still holds).")
    notes: list[NoteOut] = Field(default_factory=list, description="A new claim: the notes "
                                 "left on the step since it was last claimed (why the last "
                                 "holder let go, what it tried), oldest first: the newest "
                                 f"{HANDED_NOTES} at most, within {HANDED_CHARACTERS:,} "
                                 "characters.")
    notes_left_out: int = Field(0, description="Older notes left since the last claim that "
                                "this answer does not carry: the plan's timeline and the log "
                                "have them.")
    warnings: list[str] = WARNINGS


NothingReady = Literal["all_held", "all_blocked", "all_done", "empty", "none_ready",
                       "none_to_review"]


class ClaimNextOut(Schema):
    claimed: ClaimOut | None
    reason: NothingReady | None = Field(None, description="Why nothing was claimed.")
    message: str = Field(examples=['claimed step 01KXMRCX… "Rate-limit POST /auth/refresh"'])


class StepChangeOut(StepAnswer):
    status: Status
    plan: str = Field(description="The step's plan.")
    unblocked: list[str] = Field(default_factory=list, exclude_if=lambda ids: not ids,
                                 description="Done: the steps that waited on it and wait on "
                                 "nothing now (present when any do).")
    next: "ClaimNextOut | None" = Field(None, exclude_if=lambda found: found is None,
                                        description="With claim_next: the plan's next step, "
                                        "claimed for you, or why none was (present then).")


class ForceReleaseOut(Schema):
    step_id: str
    released: bool = Field(description="False when the step carried no claim.")


class LogPageOut(Schema):
    after: int
    next_after: int = Field(description="Pass as after= for the next page.")
    more: bool
    events: list[EventOut]


class TimelineOut(Schema):
    """One clock, a lane per session, entries in log order (the order races were won)."""

    lanes: list[Lane]  # the read side's own types: one definition of each field
    entries: list[Entry]
    progress: list[Progress]
    more: bool = Field(False, description="More entries follow: ask again with "
                       "`after=next_after`.")
    next_after: int = Field(0, description="The last entry's log position (or `after` "
                            "when there is none): where the next page starts.")


class HealthOut(Schema):
    status: Literal["ok"]
    store: str
    position: int


class ErrorOut(Schema):
    reason: str = Field(description="A stable code: already_claimed, blocked, closed, "
                        "stale_fence, not_holder, unknown_step, invalid_input, …",
                        examples=["already_claimed"])
    message: str = Field(examples=[f'task already claimed: held by "{SID}" (step {STEP} '
                                   '"Rate-limit POST /auth/refresh (per-IP and per-family)")'])
    step_id: str | None = None
    holder: str | None = None
    holder_name: str | None = Field(default=None, description="The holder session's name, if any.")
    fence: int | None = None
    current_fence: int | None = None
    retry_after: int | None = Field(default=None, description="Seconds until the holder's "
                                    "lease runs out, when nothing renews it.")
    status: str | None = None
    blockers: list[BlockerOut] | None = None
    holder_step: str | None = Field(default=None, description="paths_reserved: the step whose "
                                    "claim holds the paths.")
    patterns: list[str] | None = Field(default=None, description="paths_reserved: the holder's "
                                       "reserved patterns the claim's paths meet.")
    session_id: str | None = None
    needs: str | None = Field(default=None, description="forbidden: the role the operation "
                              "needs (reader, worker, planner or admin).")
    role: str | None = Field(default=None, description="forbidden: the caller's role.")
    check: str | None = Field(default=None, description="check_failed: the name of the "
                              "check the completion reported failed.")
    candidates: list[str] | None = Field(default=None, description="ambiguous_reference: "
                                         "the references of the steps a bare key names.")
    field: str | None = None
