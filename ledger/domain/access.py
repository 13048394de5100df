"""Access keys and roles: who may do what, decided from the log alone.

A key is issued with a role and revoked as events in its own stream (`key:<name>`), so
the log says who could act when. The store keeps only the key's digest; the key itself is
shown once, to whoever issued it. A session started with a key takes that key's role.

Roles are ordered, each including the ones before it:

- `reader`: every read.
- `worker`: its own sessions; claim, claim-next, heartbeat, complete, release and drop
  what it holds; notes; path checks; add a step to an existing plan.
- `planner`: create plans; constraints, priorities, dependencies; revise, drop or
  reopen steps it does not hold.
- `admin`: force-release; keys.
"""

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev

Role = Literal["reader", "worker", "planner", "admin"]
ROLES: tuple[Role, ...] = ("reader", "worker", "planner", "admin")

# A session started while the store held no key (zero set-up on a laptop) may do what
# every session could before keys existed: everything but force-release and keys.
OPEN_ROLE: Role = "planner"

KEY_STREAM_PREFIX = "key:"
KEY_PREFIX = "plk_"
KEY_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


def key_stream(name: str) -> str:
    """The stream holding one key name's issues and revocations."""
    return f"{KEY_STREAM_PREFIX}{name}"


def digest_of(key: str) -> str:
    """What the store keeps of a key. A key holds 256 random bits, so a plain hash is
    as hard to reverse as the key is to guess; no salt or stretching is needed."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def allows(held: Role, needed: Role) -> bool:
    """Whether a caller with role `held` may do what needs role `needed`."""
    return ROLES.index(held) >= ROLES.index(needed)


def check_role(role: str) -> Role:
    """The role named, or InvalidInput listing the roles."""
    for known in ROLES:
        if role == known:
            return known
    raise errors.InvalidInput("role", f"{role!r} is not a role; roles are "
                              + ", ".join(ROLES))


def check_key_name(name: str) -> str:
    if not KEY_NAME.fullmatch(name):
        raise errors.InvalidInput("name", "a key's name is 1-64 letters, digits, '.', '_', "
                                  "'@' or '-', starting with a letter or digit")
    return name


@dataclass(frozen=True)
class KeyState:
    """A key name as its events left it: the role and digest of its latest issue."""

    name: str
    version: int
    role: Role
    digest: str
    issued_at: datetime
    issued_by: str | None
    revoked_at: datetime | None = None
    revoked_by: str | None = None

    @property
    def live(self) -> bool:
        return self.revoked_at is None


def evolve_key(state: KeyState | None, event: ev.LedgerEvent) -> KeyState:
    version = event.originator_version
    if isinstance(event, ev.KeyIssued):
        return KeyState(event.name, version, check_role(event.role), event.digest,
                        event.timestamp, event.actor)
    assert state is not None, f"{type(event).__name__} before KeyIssued"
    assert isinstance(event, ev.KeyRevoked), f"{type(event).__name__} in a key stream"
    return KeyState(state.name, version, state.role, state.digest, state.issued_at,
                    state.issued_by, event.timestamp, event.actor)


def decide_issue_key(state: KeyState | None, name: str, role: str, digest: str,
                     now: datetime, actor: str) -> ev.KeyIssued:
    """Issue a key under `name`: refused while a live key holds the name (a revoked
    name may be issued again, as a new key)."""
    check_key_name(name)
    checked = check_role(role)
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise errors.InvalidInput("digest", "a key's digest is 64 lower-case hex digits")
    if state is not None and state.live:
        raise errors.KeyNameTaken(name)
    version = 1 if state is None else state.version + 1
    return ev.KeyIssued(key_stream(name), version, timestamp=now, session_id=None,
                        actor=actor, name=name, role=checked, digest=digest)


def decide_revoke_key(state: KeyState | None, name: str, now: datetime,
                      actor: str) -> ev.KeyRevoked:
    """Revoke the live key named `name`."""
    if state is None or not state.live:
        raise errors.UnknownKey(name)
    return ev.KeyRevoked(key_stream(name), state.version + 1, timestamp=now,
                         session_id=None, actor=actor, name=name)


def fold_key(state: KeyState | None, events: Iterable[ev.LedgerEvent]) -> KeyState | None:
    """Fold a key stream; None when the stream is not a key's."""
    if state is not None and not isinstance(state, KeyState):
        return None
    for event in events:
        if state is None and not isinstance(event, ev.KeyIssued):
            return None
        if not isinstance(event, ev.KeyIssued | ev.KeyRevoked):
            return None
        state = evolve_key(state, event)
    return state
