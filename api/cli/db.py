"""`planledger db …`: set up, inspect, back up and restore the store.

PostgreSQL needs one explicit set-up step (`db init`); SQLite needs none. Backups work on
SQLite stores only (infra.sqlite_backup)."""

import os
from collections.abc import Callable
from typing import TypeVar

from planledger.api.cli import output
from planledger.api.cli.grammar import Values
from planledger.infra.secret import (
    SECRET_ENV,
    SecretError,
    find_secret,
    keep_secret,
    read_secret_file,
    secret_path,
)
from planledger.ledger.storage import (
    MEMORY,
    StorageConfigError,
    is_postgres,
    refuse_memory_sqlite,
    resolve_db,
)

EXIT_NOT_READY = 1
EXIT_BAD_CONFIG = 2
T = TypeVar("T")


def _postgres_url(db: str | None) -> str | None:
    """The PostgreSQL URL to set up, or None for an embedded store.

    For an embedded store it prints why nothing is needed. It decides before importing
    anything of PostgreSQL's."""
    resolved = _not_memory_sqlite(resolve_db(db))
    if not is_postgres(resolved):
        if resolved != MEMORY:
            _refuse_a_foreign_file(resolved)
        output.line(f"{resolved}: an embedded store creates its tables on first use")
        return None
    return resolved


def _not_memory_sqlite(db: str) -> str:
    """Return `db`, or exit with a message if it names an in-memory SQLite database."""
    try:
        refuse_memory_sqlite(db)
    except StorageConfigError as error:
        output.line(str(error), stderr=True)
        raise SystemExit(EXIT_BAD_CONFIG) from None
    return db


def _refuse_a_foreign_file(db: str) -> None:
    from planledger.infra.sqlite_shape import NotAStore, check_store_file
    from planledger.infra.store_format import NewerStore

    try:
        check_store_file(db)
    except (NotAStore, NewerStore) as error:
        output.line(str(error), stderr=True)
        raise SystemExit(EXIT_NOT_READY) from None


def _on_postgres(url: str, action: Callable[[str], T]) -> T:
    """Run `action` on the PostgreSQL URL, turning set-up failures into a readable exit."""
    import psycopg  # here, not at the top: every `planledger` command imports this module

    from planledger.infra.store_format import NewerStore

    try:
        return action(url)
    except NewerStore as error:
        output.line(str(error), stderr=True)
        raise SystemExit(EXIT_NOT_READY) from None
    except StorageConfigError as error:
        output.line(str(error), stderr=True)
        raise SystemExit(EXIT_BAD_CONFIG) from None
    except psycopg.OperationalError as error:
        output.line(f"cannot reach PostgreSQL: {error}".strip(), stderr=True)
        raise SystemExit(EXIT_NOT_READY) from None


def init(v: Values) -> None:
    url = _postgres_url(v["db"])
    if url is None:
        return
    from planledger.infra.pg_schema import init_schema

    report = _on_postgres(url, init_schema)
    if report.created:
        output.line(f"schema {report.schema}: created {', '.join(report.created)}")
    else:
        output.line(f"schema {report.schema}: already initialised")


def status(v: Values) -> None:
    url = _postgres_url(v["db"])
    if url is None:
        return
    from planledger.infra.pg_schema import missing_objects

    missing = _on_postgres(url, missing_objects)
    if missing:
        output.line(f"not initialised: missing {', '.join(missing)}; run `planledger db init`")
        raise SystemExit(EXIT_NOT_READY)
    output.line("ready")


def _sqlite_store(db: str | None, what: str) -> str:
    """The SQLite store to back up or restore. For other stores it exits and says what
    to use instead."""
    resolved = _not_memory_sqlite(resolve_db(db))
    if is_postgres(resolved):
        output.line(f"`db {what}` is for an SQLite store; on PostgreSQL use pg_dump and "
                    "pg_restore (see docs/deployment.md, Backups)", stderr=True)
        raise SystemExit(EXIT_BAD_CONFIG)
    if resolved == MEMORY:
        output.line(f"`db {what}`: an in-memory store has nothing to keep", stderr=True)
        raise SystemExit(EXIT_BAD_CONFIG)
    _refuse_a_foreign_file(resolved)
    return resolved


def backup(v: Values) -> None:
    file, db, with_secret = v["file"], v["db"], v["with_secret"]
    from planledger.infra.sqlite_backup import BackupError
    from planledger.infra.sqlite_backup import backup as copy_store

    store = _sqlite_store(db, "backup")
    secret = _secret_to_copy(store, file) if with_secret else None
    try:
        copied = copy_store(store, file)
    except BackupError as error:
        output.line(f"backup refused: {error}", stderr=True)
        raise SystemExit(EXIT_NOT_READY) from None
    if secret is not None:
        _keep(secret, file)
    kept = (f"its secret is in {secret_path(file)}" if secret is not None
            else "the store's secret is not in it")
    output.line(f"backed up {copied.events} events (log position {copied.position}) to "
                f"{file}; {kept}")


def _secret_to_copy(store: str, file: str) -> bytes:
    """The store's secret, for --with-secret.

    It exits before anything is written if there is no secret to copy, or if a file
    already sits where the copy would go beside FILE."""
    secret = _found_secret(store)
    if secret is None:
        output.line(f"backup refused: {store} has no secret to copy (no {secret_path(store)}, "
                    "no PLANLEDGER_SECRET)", stderr=True)
        raise SystemExit(EXIT_NOT_READY)
    if os.path.lexists(secret_path(file)):
        output.line(f"backup refused: {secret_path(file)} already exists; name a new file",
                    stderr=True)
        raise SystemExit(EXIT_NOT_READY)
    return secret


def _found_secret(store: str) -> bytes | None:
    try:
        return find_secret(store)
    except SecretError as error:
        output.line(str(error), stderr=True)
        raise SystemExit(EXIT_BAD_CONFIG) from None


def _keep(secret: bytes, store: str) -> None:
    try:
        keep_secret(secret, secret_path(store))
    except OSError as error:
        output.line(f"cannot write {secret_path(store)}: {error.strerror}", stderr=True)
        raise SystemExit(EXIT_NOT_READY) from None


def restore(v: Values) -> None:
    file, db, replace = v["file"], v["db"], v["replace"]
    from planledger.infra.sqlite_backup import BackupError
    from planledger.infra.sqlite_backup import restore as put_back

    store = _sqlite_store(db, "restore")
    try:
        copied = put_back(file, store, replace=replace)
    except BackupError as error:
        output.line(f"restore refused: {error}", stderr=True)
        raise SystemExit(EXIT_NOT_READY) from None
    output.line(f"restored {copied.events} events (log position {copied.position}) into "
                f"{store}")
    _restore_secret(file, store)


def _restore_secret(file: str, store: str) -> None:
    """Put the backup's secret (FILE.secret, from `backup --with-secret`) beside the store.

    This happens only if the store has no secret yet. Otherwise it warns. Without the
    backup's secret, the copy's tokens and signed head belong to another store: a server
    would make a new secret and refuse them all."""
    if os.path.lexists(secret_path(store)):
        return
    if os.path.lexists(secret_path(file)):
        try:
            secret = read_secret_file(secret_path(file))
        except SecretError as error:
            output.line(f"warning: the secret beside the backup is not copied: {error}",
                        stderr=True)
            return
        _keep(secret, store)
        output.line(f"and its secret into {secret_path(store)}")
    elif not os.environ.get(SECRET_ENV):
        output.line(f"warning: no secret beside {store}: copy the secret of the store this "
                    f"backup was taken from to {secret_path(store)} (or set {SECRET_ENV}) "
                    "before serving it; without it, its sessions' tokens and signed head "
                    "cannot be checked", stderr=True)
