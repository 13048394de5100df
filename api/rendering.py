"""Each command's result as the answer every interface gives: one renderer per result.

HTTP answers it as JSON, MCP as a tool's structured content, the CLI prints it; an
idempotent retry replays the answer recorded when it was first rendered here.
"""

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from planledger.api import reads
from planledger.api.runtime import Runtime
from planledger.api.schemas import (
    ClaimNextOut,
    ClaimOut,
    ForceReleaseOut,
    KeyOut,
    LinkOut,
    NoteAddedOut,
    NoteOut,
    PlanCreatedOut,
    ReadyOut,
    SessionEndOut,
    SessionStartedOut,
    StepChangeOut,
    StepRefOut,
    paths_out,
)
from planledger.ledger import commands as c
from planledger.ledger.domain.access import OPEN_ROLE, KeyState
from planledger.ledger.domain.paths import wide_patterns
from planledger.ledger.domain.references import step_reference
from planledger.ledger.domain.state import Note, SessionState, StepDef


def claim_out(grant: c.Grant) -> ClaimOut:
    return ClaimOut(paths=paths_out(grant.paths),
                    step_id=grant.step_id, ref=grant.ref, plan=grant.plan, title=grant.title,
                    holder=grant.session_id, fence=grant.fence, expires_at=grant.expires_at,
                    renewed=grant.renewed, took_over_from=grant.took_over_from,
                    notes=[note_out(n) for n in grant.notes],
                    notes_left_out=grant.notes_left_out, warnings=list(grant.warnings),
                    status="in_review" if grant.review else "in_progress")


def note_out(note: Note) -> NoteOut:
    return NoteOut(by=note.by, at=note.at, text=note.text, after=note.after)


def step_change_out(runtime: Runtime, changed: c.StepChanged) -> StepChangeOut:
    """A step's new status; done, with the steps it unblocked; after a completion that
    claimed the next step too, what that claim found."""
    unblocked = reads.unblocked(runtime, changed.step_id) if changed.status == "done" else []
    found = next_claim_out(runtime, changed.next) if changed.next is not None else None
    return StepChangeOut(step_id=changed.step_id, ref=changed.ref, status=changed.status,
                         plan=changed.plan,
                         unblocked=unblocked, next=found)


def next_claim_out(runtime: Runtime, found: c.NextClaim) -> ClaimNextOut:
    if found.grant is None and found.review:
        return ClaimNextOut(claimed=None, reason="none_to_review",
                            message=reads.nothing_to_review(runtime, found.plan))
    if found.grant is None:
        reason, message = reads.nothing_ready(runtime, found.plan)
        return ClaimNextOut(claimed=None, reason=reason, message=message)
    claimed = claim_out(found.grant)
    taken = "took step {} for review" if found.grant.review else "claimed step {}"
    return ClaimNextOut(claimed=claimed, reason=None,
                        message=f'{taken.format(claimed.ref or claimed.step_id)} '
                                f'"{claimed.title}"')


def session_started_out(session: SessionState) -> SessionStartedOut:
    return SessionStartedOut(session_id=session.id, name=session.name,
                             started_at=session.started_at, role=session.role or OPEN_ROLE,
                             key=session.key)


def key_out(key: KeyState) -> KeyOut:
    return KeyOut(name=key.name, role=key.role, live=key.live, issued_at=key.issued_at,
                  issued_by=key.issued_by, revoked_at=key.revoked_at,
                  revoked_by=key.revoked_by)


def plan_created_out(made: c.PlanCreated) -> PlanCreatedOut:
    plan = made.plan
    refs = [_step_ref(plan.slug, plan.steps[i], k or None)
            for i, k in zip(made.step_ids, made.keys, strict=True)]
    return PlanCreatedOut(slug=plan.slug, title=plan.title,
                          constraints=dict(plan.constraints), steps=refs,
                          require_checks_pass=plan.require_checks_pass,
                          review_required=plan.review_required,
                          warnings=[f"step {s.ref}: {said}" for s in refs
                                    for said in s.warnings])


def step_ref_out(defined: c.StepDefined) -> StepRefOut:
    return _step_ref(defined.plan, defined.step, defined.step.key)


def _step_ref(plan: str, step: StepDef, key: str | None) -> StepRefOut:
    return StepRefOut(step_id=step.id, ref=step_reference(plan, step.position), key=key,
                      plan=plan, title=step.title, priority=step.priority,
                      depends_on=list(step.depends_on), paths=paths_out(step.paths),
                      parent=step.parent, discovered_from=step.discovered_from,
                      labels=list(step.labels),
                      links=[LinkOut(kind=k.kind, target=k.target) for k in step.links],
                      warnings=wide_patterns(step.paths))


# Each result type's answer: `(runtime, result) -> schema`.
RENDERERS: Mapping[type, Callable[[Runtime, Any], BaseModel]] = {
    SessionState: lambda _, r: session_started_out(r),
    c.SessionEnded: lambda _, r: SessionEndOut(session_id=r.session_id,
                                               released=list(r.released)),
    c.PlanCreated: lambda _, r: plan_created_out(r),
    c.StepDefined: lambda _, r: step_ref_out(r),
    c.ReadyListed: lambda rt, r: reads.ready(rt, r.plan, r.step_ids, r.limit, r.session),
    c.Grant: lambda _, r: claim_out(r),
    c.NextClaim: next_claim_out,
    c.StepChanged: step_change_out,
    c.ForceReleased: lambda _, r: ForceReleaseOut(step_id=r.step_id, released=r.released),
    c.NoteAdded: lambda _, r: NoteAddedOut(step_id=r.step_id, ref=r.ref, plan=r.plan,
                                           note=note_out(r.note)),
    KeyState: lambda _, r: key_out(r),
}

# Each command's answer schema (what a replayed answer is read back as).
ANSWERS: Mapping[type[c.Command[Any]], type[BaseModel]] = {
    c.StartSession: SessionStartedOut, c.EndSession: SessionEndOut,
    c.CreatePlan: PlanCreatedOut, c.AddStep: StepRefOut, c.ReviseStep: StepRefOut,
    c.DeclareDependencies: StepRefOut, c.ListReady: ReadyOut, c.Claim: ClaimOut,
    c.Heartbeat: ClaimOut, c.ClaimNext: ClaimNextOut, c.Complete: StepChangeOut,
    c.Release: StepChangeOut, c.Drop: StepChangeOut, c.Reopen: StepChangeOut,
    c.ForceRelease: ForceReleaseOut, c.AddNote: NoteAddedOut, c.IssueKey: KeyOut,
    c.RevokeKey: KeyOut, c.Review: StepChangeOut,
}
assert set(ANSWERS) == set(c.COMMANDS), "every command has an answer schema"


def render(runtime: Runtime, result: object) -> BaseModel:
    return RENDERERS[type(result)](runtime, result)
