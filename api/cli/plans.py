"""Reading and shaping plans: `plan create/show/list`, `ready`, `step`, `log`, `timeline`."""

from pathlib import Path
from typing import Annotated

import typer

from planledger.api.cli import render
from planledger.api.cli.common import (
    DbOption,
    JsonOption,
    SessionOption,
    TokenOption,
    UrlOption,
    emit,
    open_client,
)

plan_app = typer.Typer(help="Create and inspect plans.", no_args_is_help=True)


@plan_app.command("create")
def plan_create(
    file: Annotated[Path, typer.Argument(help="A YAML or Markdown plan file.")],
    db: DbOption = None, url: UrlOption = None, session: SessionOption = None,
    token: TokenOption = None, json_out: JsonOption = False,
) -> None:
    """Create a plan, its constraints and its steps (with dependencies) from FILE."""
    from planledger.api.cli.planfile import load_plan  # YAML: only this command reads it

    with open_client(db, url, session, token) as client:
        emit(client.create_plan(load_plan(file)), json_out, render.created)


@plan_app.command("show")
def plan_show(slug: str, db: DbOption = None, url: UrlOption = None,
              json_out: JsonOption = False) -> None:
    """A plan's progress, constraints and steps."""
    with open_client(db, url) as client:
        emit(client.plan(slug), json_out, render.plan)


@plan_app.command("list")
def plan_list(db: DbOption = None, url: UrlOption = None, json_out: JsonOption = False) -> None:
    """Every plan with its progress line."""
    with open_client(db, url) as client:
        emit(client.plans(), json_out, render.plans)


def ready(slug: Annotated[str, typer.Argument(metavar="PLAN")], db: DbOption = None,
          url: UrlOption = None, session: SessionOption = None, token: TokenOption = None,
          json_out: JsonOption = False) -> None:
    """The steps of PLAN a claim would accept now, then the held and blocked ones."""
    with open_client(db, url, session, token) as client:
        emit(client.ready(slug), json_out, render.ready)


def step(step_id: str, db: DbOption = None, url: UrlOption = None,
         json_out: JsonOption = False) -> None:
    """A step with its holder, blockers and history."""
    with open_client(db, url) as client:
        emit(client.step(step_id), json_out, render.step)


def log(after: Annotated[int, typer.Option(help="Events after this log position.")] = 0,
        limit: Annotated[int, typer.Option(help="At most this many (1..1000).")] = 100,
        db: DbOption = None, url: UrlOption = None, json_out: JsonOption = False) -> None:
    """The event log, in the order events were appended."""
    with open_client(db, url) as client:
        emit(client.log(after, limit), json_out, render.log)


def timeline(
    plan: Annotated[str | None, typer.Option(help="One plan's entries.")] = None,
    session: Annotated[list[str] | None, typer.Option(help="Only this session's lane "
                                                      "(repeat for more).")] = None,
    db: DbOption = None, url: UrlOption = None, json_out: JsonOption = False,
) -> None:
    """The merged timeline of the live log: one clock, a lane per session."""
    with open_client(db, url) as client:
        shown = client.timeline(plan, session or [])
        emit(shown, json_out, lambda _: render.timeline(shown))
