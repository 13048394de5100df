"""Readable output for people: rich tables and one-line answers."""

from datetime import datetime

import typer
from rich.table import Table

from planledger.api.cli.common import console
from planledger.api.schemas import (
    ClaimNextOut,
    ClaimOut,
    LogPageOut,
    PlanCreatedOut,
    PlanOut,
    PlanSummaryOut,
    ReadyOut,
    SessionOut,
    SessionStartOut,
    StepChangeOut,
    StepDetailOut,
    StepOut,
    TimelineOut,
)


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment else ""


def _who(step: StepOut) -> str:
    if step.holder:
        return step.holder
    if step.lapsed_holder:
        return f"lapsed: {step.lapsed_holder}"
    if step.blockers:
        return "waits on " + ", ".join(b.step_id for b in step.blockers)
    return ""


def steps_table(title: str, steps: list[StepOut]) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("step", no_wrap=True)  # ids stay whole, so people can copy them
    for column in ("title", "status", "holder / blockers", "fence"):
        table.add_column(column)
    for s in steps:
        status = "claimable" if s.claimable else s.status
        table.add_row(s.step_id, s.title, status, _who(s), str(s.fence or ""))
    return table


def plans(found: list[PlanSummaryOut]) -> None:
    table = Table(title="plans", title_justify="left")
    for column in ("plan", "title", "progress"):
        table.add_column(column)
    for p in found:
        table.add_row(p.slug, p.title, p.progress.line)
    console.print(table)


def plan(shown: PlanOut) -> None:
    console.print(f"[bold]{shown.slug}[/bold]: {shown.title} — {shown.progress.line}")
    for name, rule in shown.constraints.items():
        console.print(f"  constraint [cyan]{name}[/cyan]: {rule}")
    console.print(steps_table("steps", shown.steps))


def created(made: PlanCreatedOut) -> None:
    console.print(f"created plan [bold]{made.slug}[/bold] with {len(made.steps)} steps")
    table = Table()
    for column in ("key", "step", "title", "depends on"):
        table.add_column(column)
    for s in made.steps:
        table.add_row(s.key or "", s.step_id, s.title, ", ".join(s.depends_on))
    console.print(table)


def ready(shown: ReadyOut) -> None:
    if not shown.ready:
        console.print(f"nothing ready in {shown.plan}")
    else:
        console.print(steps_table(f"ready in {shown.plan}", shown.ready))
    if shown.held:
        console.print(steps_table("held", shown.held))
    if shown.blocked:
        console.print(steps_table("blocked", shown.blocked))


def step(shown: StepDetailOut) -> None:
    console.print(steps_table(f"step of {shown.plan}", [shown]))
    if shown.body:
        console.print(shown.body, markup=False)
    table = Table(title="history", title_justify="left")
    for column in ("at", "event", "session", "detail"):
        table.add_column(column)
    for e in shown.history:
        detail = ", ".join(f"{k}={v}" for k, v in e.data.items() if k not in ("body",))
        table.add_row(_when(e.at), e.type, e.session_id or "", detail[:80])
    console.print(table)


def claim(granted: ClaimOut) -> None:
    verb = "renewed" if granted.renewed else "claimed"
    console.print(f'{verb} {granted.step_id} "{granted.title}" — fence {granted.fence}, '
                  f"lease until {_when(granted.expires_at)}", markup=False)
    if granted.took_over_from:
        console.print(f"  (took over from lapsed holder {granted.took_over_from})",
                      markup=False)
    if granted.paths:
        reserved = ", ".join(p.pattern + (" (shared)" if p.mode == "shared" else "")
                             for p in granted.paths)
        console.print(f"  reserved: {reserved}", markup=False)


def claim_next(answer: ClaimNextOut) -> None:
    if answer.claimed:
        claim(answer.claimed)
    else:
        console.print(answer.message, markup=False)


def change(changed: StepChangeOut) -> None:
    console.print(f"{changed.step_id}: {changed.status}")


def session_started(started: SessionStartOut) -> None:
    console.print(f"session {started.session_id} started"
                  + (f" ({started.name})" if started.name else ""), markup=False)
    # Plain lines, never wrapped, so `eval "$(… | grep export)"` works in any terminal.
    typer.echo("act for it with:")
    typer.echo(f"  export PLANLEDGER_SESSION={started.session_id}")
    typer.echo(f"  export PLANLEDGER_TOKEN={started.token}")


def session(shown: SessionOut) -> None:
    state = "ended" if shown.ended else "live"
    console.print(f"session {shown.session_id} ({shown.name or 'unnamed'}), {state}, "
                  f"started {_when(shown.started_at)}", markup=False)
    for h in shown.holds:
        console.print(f'  holds {h.step_id} "{h.title}" fence {h.fence}, '
                      f"{int(h.seconds_left or 0)} s left", markup=False)


def log(page: LogPageOut) -> None:
    table = Table()
    for column in ("pos", "at", "event", "stream", "session"):
        table.add_column(column)
    for e in page.events:
        table.add_row(str(e.position), _when(e.at), e.type, e.stream, e.session_id or "")
    console.print(table)
    if page.more:
        console.print(f"more: --after {page.next_after}")


def timeline(shown: TimelineOut) -> None:
    """The merged timeline's terminal rendering (api.timeline_render, the replays' too), fed
    from the API's schema. Loaded here: the read side's timeline is a heavy import that
    every other command would pay."""
    from planledger.api import timeline_render
    from planledger.projections.timeline import Timeline

    timeline_render.terminal(Timeline(tuple(shown.lanes), tuple(shown.entries),
                                      tuple(shown.progress)),
                             console)
