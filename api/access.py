"""Who is calling and what they may do: credentials checked against the store's keys.

A caller presents one credential as `Authorization: Bearer …`: an access key (`plk_…`,
ledger.domain.access), a session token (api.identity), or the admin token. `Access.caller`
turns it into a `Caller`: the actor its writes are made as, its role, and the key behind
it. While the store holds no live key, a caller without a credential may do what anyone
could before keys existed (zero set-up on a laptop). Once one key is live, every request
needs a credential, and a session started without a key stops working.

`Access.permit` is the role check every command passes, whatever door it came through
(api.service runs it before the command's handler): the role a command needs is the
ledger's table (ledger.permissions).
"""

import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from planledger.api.errors import Unauthorized
from planledger.api.identity import Identity
from planledger.ledger.commands import Command, StartSession
from planledger.ledger.domain import errors
from planledger.ledger.domain.access import (
    KEY_PREFIX,
    OPEN_ROLE,
    KeyState,
    Role,
    allows,
    check_role,
    digest_of,
)
from planledger.ledger.domain.claims import live_holder
from planledger.ledger.domain.ids import (
    ADMIN,
    KEY_ACTOR_PREFIX,
    LOCAL_PREFIX,
    Actor,
    SessionId,
    StepId,
    acting_session,
    key_actor,
)
from planledger.ledger.domain.state import SessionState
from planledger.ledger.permissions import needed_role
from planledger.ledger.store import EventStore
from planledger.projections.readmodel import ReadModel
from planledger.projections.view import KeyIndex

NEEDS_KEY = ("this server requires an access key: send `Authorization: Bearer <key>` "
             "(an operator issues one with `planledger keys create`)")


MAX_REMEMBERED = 100_000  # sessions whose start the role check keeps beside the view's


def new_key() -> str:
    """A fresh access key: 256 random bits, with a prefix that says what it is."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Caller:
    """Who a request proved it is. `actor` None: nobody (allowed while no key is live)."""

    actor: Actor | None
    role: Role
    key: str | None = None  # the access key behind it, by name

    @property
    def session(self) -> SessionId | None:
        return None if self.actor is None else acting_session(self.actor)

    def starting(self, command: StartSession) -> StartSession:
        """`command` as this caller starts it: with its key and role (none for nobody in
        particular, while the store holds no key)."""
        if self.actor is None:
            return replace(command, key=None, role=None)
        return replace(command, key=self.key, role=self.role)


class Access:
    """Checks credentials and roles against the read model's keys and sessions."""

    def __init__(self, identity: Identity, reads: ReadModel, store: EventStore) -> None:
        self.identity = identity
        self.reads = reads
        self.store = store
        self._started: dict[SessionId, SessionState] = {}

    def keys_required(self) -> bool:
        return self.reads.key_index().any_live

    def caller(self, credential: str | None) -> Caller:
        """The caller a credential proves (Unauthorized: none, unknown or revoked). Reads
        the keys as last folded, without I/O: it runs on the event loop. A write is checked
        again on fresh state by `permit`."""
        index = self.reads.key_index()
        if credential is None or not credential.strip():
            if index.any_live:
                raise Unauthorized(NEEDS_KEY)
            return Caller(None, OPEN_ROLE)
        credential = credential.strip()
        if self.identity.is_admin(credential):
            return Caller(ADMIN, "admin")
        if credential.startswith(KEY_PREFIX):
            key = index.by_digest.get(digest_of(credential))
            if key is None or not key.live:
                raise Unauthorized("unknown or revoked access key")
            return Caller(key_actor(key.name), key.role, key.name)
        session_id = self.identity.session_of(credential)
        return self._session_caller(session_id)

    def _session_caller(self, session_id: SessionId) -> Caller:
        session = self.reads.sessions.get(session_id)
        index = self.reads.key_index()
        role = _session_role(session, index, index.by_name.get)
        return Caller(Actor(session_id), role, None if session is None else session.key)

    # --- the role check, before every command -----------------------------------------

    def role_of(self, actor: str) -> Role:
        """The role an actor acts with now. A key's state is read from the store, fresh,
        so a revocation stops its key and sessions at once on every replica; a session's
        key and role never change, so the view's (or the store's, for a session the view
        has not folded yet) serve."""
        if actor == ADMIN or actor.startswith(LOCAL_PREFIX):
            return "admin"
        if actor.startswith(KEY_ACTOR_PREFIX):
            key = self.store.access_key(actor.removeprefix(KEY_ACTOR_PREFIX))
            if key is None or not key.live:
                raise Unauthorized("unknown or revoked access key")
            return key.role
        session = self._started_session(SessionId(actor))
        if session is None:
            return "reader"  # its handler says what is wrong
        return _session_role(session, self.reads.key_index(), self.store.access_key)

    def _started_session(self, session_id: SessionId) -> SessionState | None:
        """A session as it started (its key and role never change): the view's, else the
        store's, remembered for the next command (it may end: its handler reads that)."""
        session = self.reads.sessions.get(session_id) or self._started.get(session_id)
        if session is None:
            try:
                session = self.store.session(session_id)
            except errors.UnknownSession:
                return None
            if len(self._started) >= MAX_REMEMBERED:
                self._started.clear()  # a bound, not a cache policy: misses only cost a read
            self._started[session_id] = session
        return session

    def permit(self, command: Command[object], now: datetime) -> None:
        """Refuse (NotPermitted) a command its actor's role does not allow."""
        role = self._acting_role(command)
        needs = needed_role(command, lambda step_id: self._holds(command.actor, step_id, now))
        if not allows(role, needs):
            session = acting_session(Actor(command.actor)) if command.actor else None
            if session is not None and self._started_session(session) is None:
                raise errors.UnknownSession(session)  # not a reader: no session at all
            raise errors.NotPermitted(command.name, needs, role)

    def _acting_role(self, command: Command[object]) -> Role:
        if isinstance(command, StartSession):  # the door proved the key and its role
            if command.role is not None:
                return check_role(command.role)
            return "reader" if self.keys_required() else OPEN_ROLE
        return self.role_of(command.actor) if command.actor else OPEN_ROLE

    def _holds(self, actor: str, step_id: str, now: datetime) -> bool:
        try:
            step = self.store.step(StepId(step_id))
        except errors.UnknownStep:
            return False
        return live_holder(step, now, False) == actor


def _session_role(session: SessionState | None, index: KeyIndex,
                  key_of: Callable[[str], KeyState | None]) -> Role:
    """The role a session acts with (`key_of`: a key's state by name); Unauthorized when
    its key is revoked, or when it was started without a key and keys are now required. A
    session not (yet) known here counts as a reader's: its handler says what is wrong."""
    if session is None:
        return "reader" if index.any_live else OPEN_ROLE
    if session.key is not None:
        key = key_of(session.key)
        if key is None or not key.live:
            raise Unauthorized(f'the key "{session.key}" this session was started with is '
                               "revoked; start a new session with a live key")
    elif session.role is None and index.any_live:
        raise Unauthorized("this session was started without an access key, and this server "
                           "now requires one: start a new session with a key")
    return check_role(session.role or OPEN_ROLE)
