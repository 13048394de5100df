"""`planledger db …`: the store's one explicit set-up step (PostgreSQL), its status, and
backups of an SQLite store (infra.sqlite_backup)."""

import os
from collections.abc import Callable
from typing import Annotated, TypeVar

import typer

from planledger.infra.secret import (
    SECRET_ENV,
    SecretError,
    find_secret,
    keep_secret,
    read_secret_file,
    secret_path,
)
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
        if resolved != MEMORY:
            _refuse_a_foreign_file(resolved)
        typer.echo(f"{resolved}: an embedded store creates its tables on first use")
        return None
    return resolved


def _refuse_a_foreign_file(db: str) -> None:
    from planledger.infra.sqlite_shape import NotAStore, check_store_file

    try:
        check_store_file(db)
    except NotAStore as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_NOT_READY) from None


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
    with_secret: Annotated[bool, typer.Option(
        "--with-secret", help="also write the store's secret beside the copy, as "
        "FILE.secret (readable by you only)")] = False,
) -> None:
    """Copy the SQLite store to FILE while it serves (SQLite's online backup): every write
    acknowledged before the copy began is in it. The secret (<db>.secret) is not, unless
    --with-secret: keep it apart, as a secret."""
    from planledger.infra.sqlite_backup import BackupError
    from planledger.infra.sqlite_backup import backup as copy_store

    store = _sqlite_store(db, "backup")
    secret = _secret_to_copy(store, file) if with_secret else None
    try:
        copied = copy_store(store, file)
    except BackupError as error:
        typer.echo(f"backup refused: {error}", err=True)
        raise typer.Exit(EXIT_NOT_READY) from None
    if secret is not None:
        _keep(secret, file)
    kept = (f"its secret is in {secret_path(file)}" if secret is not None
            else "the store's secret is not in it")
    typer.echo(f"backed up {copied.events} events (log position {copied.position}) to "
               f"{file}; {kept}")


def _secret_to_copy(store: str, file: str) -> bytes:
    """The store's secret, for --with-secret; exits before anything is written when there
    is none to copy or its place beside FILE is taken."""
    secret = _found_secret(store)
    if secret is None:
        typer.echo(f"backup refused: {store} has no secret to copy (no {secret_path(store)}, "
                   "no PLANLEDGER_SECRET)", err=True)
        raise typer.Exit(EXIT_NOT_READY)
    if os.path.lexists(secret_path(file)):
        typer.echo(f"backup refused: {secret_path(file)} already exists; name a new file",
                   err=True)
        raise typer.Exit(EXIT_NOT_READY)
    return secret


def _found_secret(store: str) -> bytes | None:
    try:
        return find_secret(store)
    except SecretError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(EXIT_BAD_CONFIG) from None


def _keep(secret: bytes, store: str) -> None:
    try:
        keep_secret(secret, secret_path(store))
    except OSError as error:
        typer.echo(f"cannot write {secret_path(store)}: {error.strerror}", err=True)
        raise typer.Exit(EXIT_NOT_READY) from None


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
    _restore_secret(file, store)


def _restore_secret(file: str, store: str) -> None:
    """Bring the backup's secret (FILE.secret, from `backup --with-secret`) beside the
    store if it has none; else warn: without the secret the copy's tokens and signed head
    are another store's, and a server would make a new secret and refuse them all."""
    if os.path.lexists(secret_path(store)):
        return
    if os.path.lexists(secret_path(file)):
        try:
            secret = read_secret_file(secret_path(file))
        except SecretError as error:
            typer.echo(f"warning: the secret beside the backup is not copied: {error}",
                       err=True)
            return
        _keep(secret, store)
        typer.echo(f"and its secret into {secret_path(store)}")
    elif not os.environ.get(SECRET_ENV):
        typer.echo(f"warning: no secret beside {store}: copy the secret of the store this "
                   f"backup was taken from to {secret_path(store)} (or set {SECRET_ENV}) "
                   "before serving it; without it, its sessions' tokens and signed head "
                   "cannot be checked", err=True)
