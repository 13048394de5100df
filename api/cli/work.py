"""Doing the work: `session start/end/show`, `claim`, `claim-next`, `heartbeat`,
`complete`, `release`, `drop`."""

from typing import Annotated

import typer

from planledger.api.cli import render
from planledger.api.cli.common import EXIT_NOTHING_READY, emit, open_client
from planledger.api.cli.direct import claim_paths
from planledger.api.cli.options import (
    DbOption,
    FenceOption,
    JsonOption,
    LeaseOption,
    NoteOption,
    SessionOption,
    TokenOption,
    UrlOption,
)
from planledger.api.cli.paths import PathOption, SharedPathOption
from planledger.ledger.commands import MAX_WAIT_SECONDS

session_app = typer.Typer(help="Start, show and end sessions.", no_args_is_help=True)
StepArg = Annotated[str, typer.Argument(metavar="STEP", help="The step id.")]
WaitOption = Annotated[int, typer.Option(
    "--wait", "--wait-seconds", min=0, max=MAX_WAIT_SECONDS, metavar="SECONDS",
    help="When nothing is ready, wait up to SECONDS for a step to become claimable and "
         f"claim it (0..{MAX_WAIT_SECONDS}; default 0: answer at once).")]


@session_app.command("start")
def session_start(name: Annotated[str | None, typer.Option(help="A label for people.")] = None,
                  db: DbOption = None, url: UrlOption = None,
                  json_out: JsonOption = False) -> None:
    """Start a session; prints its id and token (keep the token: it proves the session)."""
    with open_client(db, url) as client:
        emit(client.start_session(name), json_out, render.session_started)


@session_app.command("end")
def session_end(db: DbOption = None, url: UrlOption = None, session: SessionOption = None,
                token: TokenOption = None, json_out: JsonOption = False) -> None:
    """End the session; releases every step it holds."""
    with open_client(db, url, session, token) as client:
        emit(client.end_session(), json_out, render.session_ended)


@session_app.command("show")
def session_show(session_id: str, db: DbOption = None, url: UrlOption = None,
                 json_out: JsonOption = False) -> None:
    """A session and what it holds."""
    with open_client(db, url) as client:
        emit(client.session(session_id), json_out, render.session)


def claim(step_id: StepArg, lease: LeaseOption = None, path: PathOption = None,
          shared_path: SharedPathOption = None, db: DbOption = None,
          url: UrlOption = None, session: SessionOption = None, token: TokenOption = None,
          json_out: JsonOption = False) -> None:
    """Claim STEP; exits 3 if it bounced (held by another session, blocked, closed, or its
    paths reserved by another session)."""
    with open_client(db, url, session, token) as client:
        emit(client.claim(step_id, lease, claim_paths(path, shared_path)), json_out,
             render.claim)


def claim_next(plan: Annotated[str, typer.Argument(metavar="PLAN")], lease: LeaseOption = None,
               wait: WaitOption = 0, db: DbOption = None, url: UrlOption = None,
               session: SessionOption = None, token: TokenOption = None,
               json_out: JsonOption = False) -> None:
    """Claim the next ready step of PLAN (by priority, then the longest chain waiting on
    it, then the oldest); exits 4 (saying why) when nothing is ready (with --wait: when
    nothing became ready in time)."""
    with open_client(db, url, session, token) as client:
        answer = client.claim_next(plan, lease, wait)
        emit(answer, json_out, render.claim_next)
    if answer.claimed is None:
        raise typer.Exit(EXIT_NOTHING_READY)


def heartbeat(step_id: StepArg, lease: LeaseOption = None, db: DbOption = None,
              url: UrlOption = None, session: SessionOption = None, token: TokenOption = None,
              json_out: JsonOption = False) -> None:
    """Extend your lease on STEP; exits 3 if you no longer hold it."""
    with open_client(db, url, session, token) as client:
        emit(client.heartbeat(step_id, lease), json_out, render.claim)


def complete(step_id: StepArg, fence: FenceOption = None, note: NoteOption = None,
             db: DbOption = None,
             url: UrlOption = None, session: SessionOption = None, token: TokenOption = None,
             json_out: JsonOption = False) -> None:
    """Mark STEP done (you must hold it)."""
    with open_client(db, url, session, token) as client:
        emit(client.complete(step_id, fence, note), json_out, render.change)


def release(step_id: StepArg, fence: FenceOption = None, note: NoteOption = None,
            db: DbOption = None,
            url: UrlOption = None, session: SessionOption = None, token: TokenOption = None,
            json_out: JsonOption = False) -> None:
    """Give STEP back; it is claimable again at once."""
    with open_client(db, url, session, token) as client:
        emit(client.release(step_id, fence, note), json_out, render.change)


def drop(step_id: StepArg, fence: FenceOption = None, note: NoteOption = None,
         db: DbOption = None,
         url: UrlOption = None, session: SessionOption = None, token: TokenOption = None,
         json_out: JsonOption = False) -> None:
    """Drop STEP (by its holder, or by anyone when nobody holds it)."""
    with open_client(db, url, session, token) as client:
        emit(client.drop(step_id, fence, note), json_out, render.change)


def note(step_id: StepArg, text: Annotated[str, typer.Argument(
             metavar="TEXT", help="The note.")], db: DbOption = None, url: UrlOption = None,
         session: SessionOption = None, token: TokenOption = None,
         json_out: JsonOption = False) -> None:
    """Leave a handoff note on STEP for whoever picks it up next."""
    with open_client(db, url, session, token) as client:
        emit(client.add_note(step_id, text), json_out, render.note_added)
