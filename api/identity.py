"""Who is calling: session tokens and the admin token.

A session token is `<session id>.<signature>`, the signature an HMAC-SHA256 of the session
id under the server's secret. Nothing is stored per token, so a token keeps working across
restarts and on every replica that shares the secret, and it never appears in the event
log (recordings are exported). The secret comes from `PLANLEDGER_SECRET`; without it an
SQLite store keeps one generated beside its file (`<file>.secret`, mode 0600), an
in-memory store makes one per process, and PostgreSQL refuses to start: its replicas
must share one secret, so it has to come from the environment.
"""

import base64
import hashlib
import hmac
import os
import secrets
from pathlib import Path

from api.errors import ConfigError, Forbidden, Unauthorized
from ledger.domain.ids import SessionId
from ledger.storage import MEMORY, is_postgres

SECRET_ENV = "PLANLEDGER_SECRET"
_CONTEXT = b"planledger-session-token:"


def secret_path(db: str) -> Path:
    path = Path(db).expanduser()
    return path.with_name(path.name + ".secret")


def load_secret(db: str, configured: str | None) -> bytes:
    """The token secret: configured, else kept beside an SQLite file, else per process."""
    if configured:
        return configured.encode()
    if db == MEMORY:
        return secrets.token_bytes(32)
    if is_postgres(db):
        raise ConfigError(
            f"{SECRET_ENV} is required with PostgreSQL: every replica must sign session "
            "tokens with the same secret (e.g. `export PLANLEDGER_SECRET=$(openssl rand -hex 32)`)")
    return _read_or_create(secret_path(db))


def _read_or_create(path: Path) -> bytes:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write a private temporary file, then link it into place: the link fails if a
        # concurrent process got there first, and nobody ever reads a half-written secret.
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_text().strip().encode()


class Identity:
    """Issues and checks session tokens; knows the admin token (if one is configured)."""

    def __init__(self, secret: bytes, admin_token: str | None = None) -> None:
        self._secret = secret
        self._admin = admin_token

    def __repr__(self) -> str:
        return "Identity(<secret>)"

    def _signature(self, session_id: str) -> str:
        mac = hmac.new(self._secret, _CONTEXT + session_id.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    def token_for(self, session_id: str) -> str:
        return f"{session_id}.{self._signature(session_id)}"

    def session_of(self, token: str) -> SessionId:
        """The session a token speaks for; Unauthorized if it is not one we signed."""
        session_id, dot, signature = token.strip().rpartition(".")
        if not dot or not session_id:
            raise Unauthorized("malformed session token: expected <session id>.<signature>")
        if not hmac.compare_digest(signature.encode(), self._signature(session_id).encode()):
            raise Unauthorized("invalid session token: not signed by this server")
        return SessionId(session_id)

    def check_admin(self, token: str) -> None:
        if self._admin is None:
            raise Forbidden("force-release is disabled: the server has no PLANLEDGER_ADMIN_TOKEN")
        if not hmac.compare_digest(token.strip().encode(), self._admin.encode()):
            raise Forbidden("not the admin token")
