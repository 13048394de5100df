"""The server's secret: what session tokens, checkpoints, signed log heads and idempotency
stream names are authenticated under.

It comes from `PLANLEDGER_SECRET`; without it an SQLite store keeps one generated beside
its file (`<file>.secret`, mode 0600), an in-memory store makes one per process, and
PostgreSQL refuses to start: its replicas must share one secret, so it has to come from
the environment. A secret under `MIN_SECRET_BYTES` is refused wherever it comes from (an
empty file would let anyone forge every token); a file others can read is warned about.
"""

import contextlib
import logging
import os
import secrets
import stat
from pathlib import Path

from planledger.ledger.storage import MEMORY, is_postgres

SECRET_ENV = "PLANLEDGER_SECRET"
MIN_SECRET_BYTES = 32

log = logging.getLogger("planledger.secret")


class SecretError(ValueError):
    """No usable secret: missing where one is required, or too short to be one."""


def secret_path(db: str) -> Path:
    path = Path(db).expanduser()
    return path.with_name(path.name + ".secret")


def load_secret(db: str, configured: str | None = None) -> bytes:
    """The secret for the store `db`: `configured` (else `PLANLEDGER_SECRET`), else kept
    beside an SQLite file, else made for this process (an in-memory store)."""
    configured = configured if configured is not None else os.environ.get(SECRET_ENV)
    if configured:
        return _long_enough(configured.encode(), SECRET_ENV)
    if db == MEMORY:
        return secrets.token_bytes(MIN_SECRET_BYTES)
    if is_postgres(db):
        raise SecretError(
            f"{SECRET_ENV} is required with PostgreSQL: every replica must sign session "
            "tokens with the same secret (e.g. `export PLANLEDGER_SECRET=$(openssl rand -hex 32)`)")
    path = secret_path(db)
    return _long_enough(_read_or_create(path), str(path))


def find_secret(db: str) -> bytes | None:
    """The secret for the store `db` if one is given (`PLANLEDGER_SECRET`, or the file
    beside an SQLite store), else None: never makes one. For what only checks a store
    (`audit verify`): a secret made up beside a copy would make its head look forged."""
    if configured := os.environ.get(SECRET_ENV):
        return _long_enough(configured.encode(), SECRET_ENV)
    if db == MEMORY or is_postgres(db) or not os.path.lexists(secret_path(db)):
        return None
    return read_secret_file(secret_path(db))


def read_secret_file(path: Path) -> bytes:
    """The secret kept in the file `path` (SecretError: unreadable, or too short)."""
    return _long_enough(_read_regular_file(path), str(path))


def keep_secret(secret: bytes, path: Path) -> None:
    """Write `secret` to the new file `path`, readable by its owner only (FileExistsError
    if something is there: a secret is never overwritten)."""
    _create(path, secret)


def _long_enough(secret: bytes, where: str) -> bytes:
    if len(secret) < MIN_SECRET_BYTES:
        raise SecretError(
            f"the secret in {where} is {len(secret)} bytes; at least {MIN_SECRET_BYTES} are "
            "needed (anyone could forge tokens under a short one): e.g. "
            "`openssl rand -hex 32`")
    return secret


def _read_or_create(path: Path) -> bytes:
    if not os.path.lexists(path):  # a dangling symlink is there: it is refused, not replaced
        # a concurrent process may get there first: its secret is then the store's
        with contextlib.suppress(FileExistsError):
            _create(path, secrets.token_hex(32).encode())
    return _read_regular_file(path)


def _create(path: Path, secret: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Write a private temporary file, then link it into place: the link fails if a
    # concurrent process got there first, and nobody ever reads a half-written secret.
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(secret)
    try:
        os.link(tmp, path)
    finally:
        tmp.unlink()


def _read_regular_file(path: Path) -> bytes:
    """The file's bytes, refused unless it is a regular file (a symlink to one is one).
    Opened without blocking, then judged on what was opened: a FIFO would otherwise wait
    for a writer for ever, and a path checked before opening could change in between."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        what = "a symlink to nothing" if path.is_symlink() else error.strerror
        raise SecretError(f"cannot read the secret file {path}: {what}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise SecretError(f"the secret file {path} is {_file_kind(mode)}, not a regular "
                          "file: put the secret in a file there, or set " + SECRET_ENV)
    with os.fdopen(fd, "rb") as handle:
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning("the secret file %s is readable by group or others (mode %o): "
                        "`chmod 600 %s`", path, stat.S_IMODE(mode), path)
        data = handle.read()
    try:
        return data.decode().strip().encode()
    except UnicodeDecodeError:
        return data.strip()


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"))
    return next((name for test, name in kinds if test(mode)), "no regular file")
