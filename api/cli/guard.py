"""`planledger guard install` and `planledger guard check`: the commit guard (api.guard)."""

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from planledger.api.cli.options import DbOption, SessionOption, TokenOption, UrlOption

if TYPE_CHECKING:  # loaded when a command runs, not when the command line starts
    from planledger.api.guard import Ask
    from planledger.api.schemas import PathsCheckOut

guard_app = typer.Typer(
    help="A git pre-commit hook that refuses commits touching paths other sessions hold.",
    no_args_is_help=True)

RepoOption = Annotated[Path, typer.Option(
    "--repo", help="The git repository (any directory in it).", file_okay=False)]
FailClosedOption = Annotated[bool, typer.Option(
    "--fail-closed", help="Refuse the commit when the ledger cannot be asked (default: "
    "allow it, with a warning).")]
EXIT_REFUSED = 1  # what git needs to abort the commit


@guard_app.command("install")
def install(repo: RepoOption = Path("."), db: DbOption = None, url: UrlOption = None,
            fail_closed: FailClosedOption = False,
            force: Annotated[bool, typer.Option(
                "--force", help="Replace a pre-commit hook that is not planledger's.")
            ] = False) -> None:
    """Write the commit guard's hooks into a git repository.

    At every commit (and merge) the hook runs `planledger guard check` against this store
    (--db, its path resolved now) or server (--url). The committing session comes from
    PLANLEDGER_SESSION or PLANLEDGER_TOKEN in the committer's environment; its own
    reservations never refuse its commits."""
    from planledger.api.guard import GuardError
    from planledger.api.guard import install as write_hook
    from planledger.ledger.storage import MEMORY, is_postgres, resolve_db

    where = url and ["--url", url]
    if not where:
        chosen = resolve_db(db)
        local = chosen != MEMORY and not is_postgres(chosen)
        where = ["--db", str(Path(chosen).resolve()) if local else chosen]
    try:
        hooks = write_hook(repo, where, fail_closed, force)
    except GuardError as error:
        typer.echo(f"planledger guard: {error}", err=True)
        raise typer.Exit(EXIT_REFUSED) from None
    typer.echo(f"installed {', '.join(map(str, hooks))} ({' '.join(where)}"
               f"{', fails closed' if fail_closed else ''})")


@guard_app.command("check")
def check(repo: RepoOption = Path("."), db: DbOption = None, url: UrlOption = None,
          session: SessionOption = None, token: TokenOption = None,
          fail_closed: FailClosedOption = False) -> None:
    """Refuse a commit that changes paths other sessions hold: what the hook runs.

    Exits 1 when a staged change falls under another session's live exclusive path
    reservation, naming each file, pattern, holder and step. A merge is judged by what it
    changes against its first parent. When the ledger cannot be asked, the commit is
    allowed with a warning (refused with --fail-closed)."""
    from planledger.api.guard import GuardError, changed_files, refusals, session_of

    try:
        files = changed_files(repo)
    except GuardError as error:
        _unsure(str(error), fail_closed)
        return
    if not files:
        return
    committer = session_of(session, token)
    try:
        found = refusals(files, _asker(db, url, token, committer))
    except Exception as error:
        _refused_or_unsure(error, fail_closed)
        return
    if found:
        lines = "\n".join(f"  {r.describe()}" for r in found)
        typer.echo("planledger guard: this commit changes paths other sessions hold "
                   f"reserved:\n{lines}\ncoordinate with the holder, wait for the claim to "
                   "end, or unstage those files", err=True)
        raise typer.Exit(EXIT_REFUSED)


def _asker(db: str | None, url: str | None, token: str | None, committer: str | None,
           ) -> "Ask":
    from planledger.api.client import connect
    from planledger.ledger.storage import MEMORY, is_postgres, resolve_db

    if not url:
        chosen = resolve_db(db)
        if chosen != MEMORY and not is_postgres(chosen) and not Path(chosen).exists():
            raise FileNotFoundError(f"no store at {chosen}")

    def ask(files: Sequence[str]) -> "PathsCheckOut":
        with connect(url, db=db, token=token) as client:
            return client.check_paths(files=files, exclusive_only=True, but=committer)

    return ask


def _refused_or_unsure(error: Exception, fail_closed: bool) -> None:
    """A ledger that answered and refused the guard's question (a 4xx: a bad credential,
    a path it will not take) was reached: the commit is refused, naming why. A ledger that
    could not answer (unreachable, missing, its store down) leaves the commit unchecked."""
    from planledger.api.errors import problem

    if isinstance(error, ConnectionError | FileNotFoundError):
        _unsure(str(error), fail_closed)
        return
    status, body = problem(error)
    if 400 <= status < 500:
        typer.echo(f"planledger guard: the ledger refused to check this commit "
                   f"({body.message}); refused", err=True)
        raise typer.Exit(EXIT_REFUSED)
    _unsure(body.message if status != 500 else f"{type(error).__name__}: {error}",
            fail_closed)


def _unsure(why: str, fail_closed: bool) -> None:
    if fail_closed:
        typer.echo(f"planledger guard: cannot check this commit ({why}); refused (the hook "
                   "fails closed)", err=True)
        raise typer.Exit(EXIT_REFUSED)
    typer.echo(f"planledger guard: cannot check this commit ({why}); allowed without a "
               "check", err=True)

