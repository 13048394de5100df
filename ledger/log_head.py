"""The log's signed head: where the log ended, and the tip of its chain there, signed.

A store keeps one record (position, tip, mac) beside its log and moves it forward as the
log grows (SQLite: in each append's own transaction, infra.sqlite_head; PostgreSQL: the
append function moves position and tip under the log's lock, and the appending process
signs right after, infra.pg_append). `tip` is the log's chain (ledger.chain.link) up to
`position`; `mac` is an HMAC-SHA256 of both under a key derived from the store's secret
for this purpose only. Whoever can write the store's tables but does not hold the secret
can cut the log and recompute every chain, but cannot sign the shorter log's head, so a
verify that compares the head with the log it reads sees the newest events cut off, or
a stream deleted, as well as anything changed.

A head deleted with the tail (or its signature cleared) stays missing: a store starts a
head over its log only when it shows no sign of ever having kept one (SQLite: no head
table; PostgreSQL: no row in the table its first signature writes), with a warning.

What it cannot see: the store rolled back whole to an earlier copy (log and head
together), or to an older head copied earlier with its log cut to match; and someone who
can write the store removing every sign that it kept a head (dropping the head table),
which makes it look like a store from before heads, whose next write starts a head
(warning that it does). Seeing those needs a record kept outside the store: the heads
digest a verify prints, noted elsewhere.
"""

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from planledger.ledger.chain import Verified

HEAD_PURPOSE = "log-head"  # the secret's use (see api.derived_keys)
_CONTEXT = b"planledger/log-head\n"


@dataclass(frozen=True)
class SignedHead:
    """The log's tip at a position, authenticated with the store's secret."""

    position: int
    tip: str
    mac: str | None  # None: not signed yet (a process without the secret moved it)


@runtime_checkable
class KeepsHead(Protocol):
    """A recorder that keeps the log's signed head (SQLite's and PostgreSQL's)."""

    head_key: Callable[[], bytes | None]  # the key to sign with; None: cannot sign

    def read_head(self) -> SignedHead | None: ...

    def head_began(self) -> bool:
        """Whether this store ever kept a head (SQLite: its head table exists; PostgreSQL:
        the row its first signature writes): a store without one was written before heads
        were kept, one with it and no head had its head deleted."""
        ...


def head_mac(key: bytes, position: int, tip: str) -> str:
    # hmac.digest: the one-shot C path, for a MAC taken once (HeadSigner: one per append).
    return hmac.digest(key, _CONTEXT + f"{position}\n{tip}".encode(), "sha256").hex()


class HeadSigner:
    """`head_mac` under one key, for a process that signs a head at every append: the
    key's HMAC state, the context absorbed, is made once and copied for each head, instead
    of OpenSSL keying an HMAC afresh (hmac.digest) every time."""

    def __init__(self, key: bytes) -> None:
        self._keyed = hmac.new(key, _CONTEXT, "sha256")

    def mac(self, position: int, tip: str) -> str:
        mac = self._keyed.copy()
        mac.update(f"{position}\n{tip}".encode())
        return mac.hexdigest()


def signed_by(head: SignedHead, key: bytes) -> bool:
    return head.mac is not None and hmac.compare_digest(
        head.mac, head_mac(key, head.position, head.tip))


@dataclass(frozen=True)
class Finding:
    """What the head says of the log: `intact` False names what was done to it, unless
    `checked` is False (without the store's secret the head cannot be checked at all)."""

    intact: bool
    message: str
    checked: bool = True


NO_SECRET = ("cannot check the signed head without the store's secret: put the store's "
             "secret file beside it as {path}, or set PLANLEDGER_SECRET")
BEFORE_HEADS = ("no signed head yet: written by a version that kept none (0.1); the next "
                "write starts one. Until then nothing shows its newest events cut off")


def judge(verified: Verified, head: SignedHead | None, key: bytes, *,
          lag_allowed: bool, began: bool = True) -> Finding:
    """Compare the head with the log a verify read (whose tips include the head's
    position). `lag_allowed`: events after the head are appends it has not yet covered
    (PostgreSQL signs after the commit); otherwise they were appended around it. `began`:
    the store ever kept a head (KeepsHead.head_began)."""
    if head is None:
        if verified.events == 0:
            return Finding(True, "no events and no signed head yet")
        if not began:
            return Finding(True, BEFORE_HEADS)
        return Finding(False, "the store has no signed head, though it kept one: it was "
                              "deleted")
    if not signed_by(head, key):
        what = "not signed" if head.mac is None else "not signed with the store's secret"
        return Finding(False, f"the head at position {head.position} is {what}: it was "
                              "forged or altered, or written without the secret")
    if head.position > verified.last:
        return Finding(False, f"the log ends at position {verified.last} but its signed "
                              f"head is at {head.position}: the newest events were deleted")
    tip = verified.tips.get(head.position)
    if tip is None and head.position > 0:
        return Finding(False, f"the event at the signed head's position {head.position} "
                              "is gone: the newest events were deleted or replaced")
    if (tip or "") != head.tip:
        return Finding(False, f"the log up to position {head.position} is not the log that "
                              "was signed: events before it were deleted or replaced (a "
                              "stream's newest events, or a whole stream)")
    if head.position < verified.last:
        newer = f"positions {head.position + 1} to {verified.last}"
        if lag_allowed:
            return Finding(True, f"signed head at position {head.position} matches the log; "
                                 f"{newer} are not signed yet (appended as it was signed)")
        return Finding(False, f"events at {newer} were appended without moving the signed "
                              f"head (at {head.position}): written around the store")
    return Finding(True, f"signed head at position {head.position} matches the log")
