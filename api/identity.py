"""Who is calling: session tokens and the admin token.

A session token is `<session id>.<signature>`, the signature an HMAC-SHA256 of the session
id under the server's secret. Nothing is stored per token, so a token keeps working across
restarts and on every replica that shares the secret, and it never appears in the event
log (recordings are exported). The secret is the store's (`infra.secret`).
"""

import base64
import hashlib
import hmac

from planledger.api.errors import Forbidden, Unauthorized
from planledger.ledger.domain.ids import SessionId

_CONTEXT = b"planledger-session-token:"


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

    def is_admin(self, token: str) -> bool:
        """Whether `token` is the admin token (never, when none is configured)."""
        return self._admin is not None and hmac.compare_digest(
            token.strip().encode(), self._admin.encode())

    def admin_length(self) -> int | None:
        """How long the admin token is (None when none is set): a shorter text holds none."""
        return None if self._admin is None else len(self._admin)

    def admin_in(self, text: str) -> bool:
        """Whether the admin token stands anywhere in `text` (never, when none is set)."""
        return self._admin is not None and self._admin in text

    def check_admin(self, token: str) -> None:
        if self._admin is None:
            raise Forbidden("force-release is disabled: the server has no PLANLEDGER_ADMIN_TOKEN")
        if not self.is_admin(token):
            raise Forbidden("not the admin token")
