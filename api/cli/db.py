"""`planledger db …`: the store's one explicit set-up step (PostgreSQL), its status, and
backups of an SQLite store (infra.sqlite_backup)."""

from collections.abc import Callable
from typing import Annotated, TypeVar

import typer

from planledger.ledger.storage import MEMORY, StorageConfigError, is_postgres, resolve_db

db_app = typer.Typer(help="Set up, inspect, back up and restore the store.",
                     no_args_is_help=True)

DbOption = Annotated[str | None, typer.Option("--db", envvar="PLANLEDGER_DB",
                                              help="SQLite path, 'memory' or postgresql:// URL")]
EXIT_NOT_READY = 1
EXIT_BAD_CONFIG = 2
T = TypeVar("T")


def _postgres_url(db: str | None) -> str | None:
    """The PostgreSQL URL to set up; None (having said why) for an embedded store, before
    anything of PostgreSQL's is imported."""
    resolved = resolve_db(db)
    if not is_postgres(resolved):
        typer.echo(f"{resolved}: an embedded store creates its tables on first use")
        return None
    return resolved


def _on_postgres(url: str, action: Callable[[str], T]) -> T:
    """Run `action` on the PostgreSQL URL, turning set-up failures into a readable exit."""
    import psycopg  # here, not at the top: every `planledger` command imports this module

    try:
        return action(url)
    except StorageConfigError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_BAD_CONFIG) from None
    except psycopg.OperationalError as error:
        typer.echo(f"cannot reach PostgreSQL: {error}".strip(), err=True)
        raise typer.Exit(EXIT_NOT_READY) from None


@db_app.command("init")
def init(db: DbOption = None) -> None:
    """Create the PostgreSQL schema and tables; safe to run at once from many processes."""
    url = _postgres_url(db)
    if url is None:
        return
    from planledger.infra.pg_schema import init_schema

    report = _on_postgres(url, init_schema)
    if report.created:
        typer.echo(f"schema {report.schema}: created {', '.join(report.created)}")
    else:
        typer.echo(f"schema {report.schema}: already initialised")


@db_app.command("status")
def status(db: DbOption = None) -> None:
    """Say whether the PostgreSQL schema is ready; exit 1 if `db init` is still needed."""
    url = _postgres_url(db)
    if url is None:
        return
    from planledger.infra.pg_schema import missing_objects

    missing = _on_postgres(url, missing_objects)
    if missing:
        typer.echo(f"not initialised: missing {', '.join(missing)}; run `planledger db init`")
        raise typer.Exit(EXIT_NOT_READY)
    typer.echo("ready")


def _sqlite_store(db: str | None, what: str) -> str:
    """The SQLite store to back up or restore; exits naming the way for other stores."""
    resolved = resolve_db(db)
    if is_postgres(resolved):
        typer.echo(f"`db {what}` is for an SQLite store; on PostgreSQL use pg_dump and "
                   "pg_restore (see README, Backups)", err=True)
        raise typer.Exit(EXIT_BAD_CONFIG)
    if resolved == MEMORY:
        typer.echo(f"`db {what}`: an in-memory store has nothing to keep", err=True)
        raise typer.Exit(EXIT_BAD_CONFIG)
    return resolved


@db_app.command("backup")
def backup(
    file: Annotated[str, typer.Argument(help="the new file to write the copy to")],
    db: DbOption = None,
) -> None:
    """Copy the SQLite store to FILE while it serves (SQLite's online backup): every write
    acknowledged before the copy began is in it. The secret (<db>.secret) is not: keep it
    apart."""
    from planledger.infra.sqlite_backup import BackupError
    from planledger.infra.sqlite_backup import backup as copy_store

    store = _sqlite_store(db, "backup")
    try:
        copied = copy_store(store, file)
    except BackupError as error:
        typer.echo(f"backup refused: {error}", err=True)
        raise typer.Exit(EXIT_NOT_READY) from None
    typer.echo(f"backed up {copied.events} events (log position {copied.position}) to "
               f"{file}; the store's secret is not in it")


@db_app.command("restore")
def restore(
    file: Annotated[str, typer.Argument(help="a file written by `planledger db backup`")],
    db: DbOption = None,
    replace: Annotated[bool, typer.Option(
        "--replace", help="replace a store that holds events (stop its servers first)")] = False,
) -> None:
    """Put a backup in place of the SQLite store (created if missing)."""
    from planledger.infra.sqlite_backup import BackupError
    from planledger.infra.sqlite_backup import restore as put_back

    store = _sqlite_store(db, "restore")
    try:
        copied = put_back(file, store, replace=replace)
    except BackupError as error:
        typer.echo(f"restore refused: {error}", err=True)
        raise typer.Exit(EXIT_NOT_READY) from None
    typer.echo(f"restored {copied.events} events (log position {copied.position}) into "
               f"{store}")
