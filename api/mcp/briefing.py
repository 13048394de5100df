"""What an agent learns when its session starts: the plans in motion, their progress and
their constraints, so it starts knowing the rules."""

from planledger.api import reads
from planledger.api.mcp.schemas import PlanBriefOut, SessionBriefingOut
from planledger.api.runtime import Runtime
from planledger.api.schemas import PlanOut, PlanSummaryOut, ProgressOut, SessionStartOut

NEXT = ("Next: tasks_ready(plan) lists what you may claim (oldest first); tasks_claim(id) "
        "one, or tasks_claim_next(plan) to take the first; tasks_complete(id) when done.")


def in_motion(progress: ProgressOut) -> bool:
    """A plan with steps still to close (open, claimed or blocked)."""
    return progress.done + progress.dropped < progress.total


def plans_in_motion(runtime: Runtime) -> list[PlanSummaryOut]:
    return [p for p in reads.plans(runtime) if in_motion(p.progress)]


def briefing(runtime: Runtime, started: SessionStartOut) -> SessionBriefingOut:
    plans = [reads.plan(runtime, p.slug) for p in plans_in_motion(runtime)]
    briefs = [PlanBriefOut(slug=p.slug, title=p.title, progress=p.progress.line,
                           constraints=p.constraints) for p in plans]
    who = f' ("{started.name}")' if started.name else ""
    lines = [f"You are session {started.session_id}{who}."]
    lines += _plan_lines(plans) if plans else ["No plan is in motion (plans_list shows all)."]
    lines.append(NEXT)
    return SessionBriefingOut(**dict(started), briefing="\n".join(lines), plans=briefs)


def _plan_lines(plans: list[PlanOut]) -> list[str]:
    lines = ["Plans in motion:"]
    for plan in plans:
        lines.append(f'- {plan.slug} "{plan.title}": {plan.progress.line}')
        lines += [f"  constraint {name}: {rule}" for name, rule in plan.constraints.items()]
    return lines
