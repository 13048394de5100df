"""Secrets in agents' transcripts, masked before anything is kept of them.

A transcript holds whatever the agent saw and sent: the session token `session_start`
answered (`<session id>.<signature>`, which acts for the session), the token it passed
back on later calls, an admin token or an access key on a command line, in a header or
in an environment assignment (`PLANLEDGER_ADMIN_TOKEN=…`, `authorization: bearer …`).
None of that may reach a timeline someone else reads, so transcripts are masked as they
are read, unless the caller asks to see them (`reveal`). The session id before a token's
dot is kept: it is no secret (every event names it) and it is what binds a transcript to
its ledger session.
"""

import re
from typing import Any

from planledger.ledger.domain.access import KEY_PREFIX

MASK = "[masked]"
# A session token: a ULID, a dot, an HMAC-SHA256 in unpadded url-safe base64 (43 chars).
SESSION_TOKEN = re.compile(r"\b([0-9A-HJKMNP-TV-Z]{26})\.[A-Za-z0-9_-]{32,}")
# An access key, wherever it stands (api.access makes them with this prefix).
ACCESS_KEY = re.compile(rf"{KEY_PREFIX}[A-Za-z0-9_-]{{16,}}")
# A token on a command line or in a header, whatever it looks like; HTTP's scheme names
# are case-insensitive, so `bearer` is one too.
TOKEN_FLAG = re.compile(r"(--token[= ]|--admin-token[= ]|--key[= ]|\bbearer\s+)"
                        r"(?!\[masked)([^\s\"']+)", re.IGNORECASE)
# A shell or .env assignment to a name that says it holds a credential.
SECRET_ASSIGNMENT = re.compile(r"\b(\w*(?:token|key|secret|password|passwd))=([\"']?)"
                               r"(?!\[masked)([^\s\"']+)", re.IGNORECASE)
SECRET_KEYS = frozenset({"token", "admin_token", "password", "secret", "api_key", "apikey",
                         "authorization", "access_token", "refresh_token"})


def mask_text(text: str, reveal: bool = False) -> str:
    """`text` with every session token's signature and every flagged token masked."""
    if reveal:
        return text
    text = SESSION_TOKEN.sub(rf"\1.{MASK}", text)
    text = ACCESS_KEY.sub(MASK, text)
    text = SECRET_ASSIGNMENT.sub(rf"\1=\2{MASK}", text)
    return TOKEN_FLAG.sub(rf"\1{MASK}", text)


def mask_value(value: Any, reveal: bool = False) -> Any:
    """A JSON value with secret-named keys masked and tokens in its strings masked
    (walked without recursion: transcripts are untrusted, see replays.jsonline)."""
    if reveal:
        return value
    root: list[Any] = [value]
    pending: list[tuple[list[Any] | dict[str, Any], Any]] = [(root, 0)]
    while pending:
        holder, key = pending.pop()
        item = holder[key]
        if isinstance(item, dict):
            copy = dict(item)
            holder[key] = copy
            for name, child in copy.items():
                if name.lower() in SECRET_KEYS and isinstance(child, str) and child:
                    copy[name] = _masked_token(child)
                else:
                    pending.append((copy, name))
        elif isinstance(item, list):
            copy_list = list(item)
            holder[key] = copy_list
            pending.extend((copy_list, i) for i in range(len(copy_list)))
        elif isinstance(item, str):
            holder[key] = mask_text(item)
    return root[0]


def _masked_token(token: str) -> str:
    """A secret-named value: a session token keeps its session id, anything else goes."""
    session, dot, _ = token.partition(".")
    if dot and re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{26}", session):
        return f"{session}.{MASK}"
    return MASK
