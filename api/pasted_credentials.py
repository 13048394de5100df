"""Credentials pasted into text that others read are refused before anything is written.

Every text a command carries (titles, bodies, constraints, notes, findings, reasons) is
served to every reader: `/api/log`, timelines, recordings, the next claimer's briefing.
An agent that pastes its session token, an access key or the admin token into a note
hands it to all of them. This server knows its own credentials, so it looks for them in
a command's texts and refuses the command, naming the field and the kind of credential
(never the credential), so nothing is half-written. A string merely shaped like a token
that this server did not issue is left alone: it acts for nobody.
"""

import dataclasses
import functools
import hmac
import re
from collections.abc import Iterator
from typing import Any

from planledger.api.identity import Identity
from planledger.ledger.domain.access import KEY_PREFIX, digest_of
from planledger.ledger.domain.errors import InvalidInput
from planledger.projections.readmodel import ReadModel

# A session token as api.identity makes one: a ULID, a dot, 43 characters of base64url.
SESSION_TOKEN = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}\.[A-Za-z0-9_-]{43}")
ACCESS_KEY = re.compile(rf"{KEY_PREFIX}[A-Za-z0-9_-]{{43}}")
WHO_ACTS = frozenset({"actor"})  # settled by the door from the credential, never text
SESSION_TOKEN_LENGTH = 26 + 1 + 43
ACCESS_KEY_LENGTH = len(KEY_PREFIX) + 43
SHORTEST_ISSUED = min(SESSION_TOKEN_LENGTH, ACCESS_KEY_LENGTH)


class PastedCredentials:
    """`refuse_in(command)`: InvalidInput if one of its texts holds a credential of ours."""

    def __init__(self, identity: Identity, reads: ReadModel) -> None:
        self.identity = identity
        self.reads = reads

    def refuse_in(self, command: object) -> None:
        admin = self.identity.admin_length()
        shortest = SHORTEST_ISSUED if admin is None else min(SHORTEST_ISSUED, admin)
        for field, text in texts_of(command):
            if len(text) < shortest:  # most texts (ids, slugs, short notes): none fits
                continue
            kind = self._credential_in(text)
            if kind is not None:
                raise InvalidInput(field, f"holds {kind}; everyone who reads the ledger "
                                   "would see it: never paste a credential into its text")

    def _credential_in(self, text: str) -> str | None:
        for token in SESSION_TOKEN.findall(text):
            if self._signed_here(token):
                return "a session token"
        keys = ACCESS_KEY.findall(text)
        if keys and any(digest_of(k) in self.reads.key_index().by_digest for k in keys):
            return "an access key"
        if self.identity.admin_in(text):
            return "the admin token"
        return None

    def _signed_here(self, token: str) -> bool:
        session_id, _, signature = token.partition(".")
        expected = self.identity.token_for(session_id).partition(".")[2]
        return hmac.compare_digest(signature.encode(), expected.encode())


def texts_of(command: object) -> Iterator[tuple[str, str]]:
    """Every string a command carries, with the field it stands in (`steps[2].body`)."""
    pending: list[tuple[str, Any]] = [("", command)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, str):
            yield where or "text", value
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            pending.extend((f"{where}.{name}" if where else name, getattr(value, name))
                           for name in _text_fields(type(value)))
        elif isinstance(value, list | tuple):
            pending.extend((f"{where}[{i}]", item) for i, item in enumerate(value))
        elif isinstance(value, dict):
            pending.extend((f"{where}.{k}", item) for k, item in value.items())


@functools.cache
def _text_fields(kind: type) -> tuple[str, ...]:
    """The fields of a dataclass that may carry text: all but who acts (asked once per
    class: every command passes here)."""
    return tuple(f.name for f in dataclasses.fields(kind) if f.name not in WHO_ACTS)
