"""What an agent learns when its session starts: the plans in motion, their progress and
their constraints, so it starts knowing the rules."""

from planledger.api import reads
from planledger.api.mcp.schemas import PlanBriefOut, SessionBriefingOut
from planledger.api.runtime import Runtime
from planledger.api.schemas import PlanSummaryOut, ProgressOut, SessionStartOut

NEXT = ("Next: tasks_ready(plan) lists what you may claim (by priority, then oldest); "
        "tasks_claim(step_id) one, or tasks_claim_next(plan) to take the one the longest "
        "chain waits on; tasks_complete(step_id) when done.")


def in_motion(progress: ProgressOut) -> bool:
    """A plan with steps still to close (open, claimed or blocked), or none yet: a plan
    just created is where its first steps go."""
    return progress.total == 0 or progress.done + progress.dropped < progress.total


def plans_in_motion(runtime: Runtime) -> list[PlanSummaryOut]:
    return [p for p in reads.plans(runtime) if in_motion(p.progress)]


BRIEFED = 5  # plans a briefing names; the rest are counted, however many there are


def briefing(runtime: Runtime, started: SessionStartOut) -> SessionBriefingOut:
    """The plans in motion that need hands first (most claimable steps), at most BRIEFED
    of them with their constraints, and a count of the rest: short however many exist."""
    moving = sorted(plans_in_motion(runtime),
                    key=lambda p: (-p.progress.claimable, p.created_at, p.slug))
    briefs = [PlanBriefOut(slug=p.slug, title=p.title, progress=p.progress.line,
                           constraints=reads.constraints(runtime, p.slug))
              for p in moving[:BRIEFED]]
    who = f' ("{started.name}")' if started.name else ""
    lines = [f"You are session {started.session_id}{who}."]
    lines += _plan_lines(briefs) if briefs else ["No plan is in motion (plans_list shows all)."]
    if len(moving) > BRIEFED:
        lines.append(f"{len(moving) - BRIEFED} more plans are in motion (plans_list).")
    lines.append(NEXT)
    return SessionBriefingOut(**dict(started), briefing="\n".join(lines), plans=briefs,
                              more_plans=max(0, len(moving) - BRIEFED))


def _plan_lines(plans: list[PlanBriefOut]) -> list[str]:
    lines = ["Plans in motion (those with steps to claim first):"]
    for plan in plans:
        lines.append(f'- {plan.slug} "{plan.title}": {plan.progress}')
        lines += [f"  constraint {name}: {rule}" for name, rule in plan.constraints.items()]
    return lines
