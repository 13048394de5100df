"""Tamper evidence: every stored event carries a hash chained to the previous event of its
stream, so an event changed, removed or reordered after the fact shows.

The store's own bytes for an event (compact JSON, see the event store's mapper) are the
event's *body*. Sealing appends two keys to that JSON object, last:

    {...body...,"prev_hash":"<hash of version n-1, or empty>","hash":"<sha256 hex>"}

with `hash = sha256(prev_hash \\n stream \\n version \\n topic \\n body)`. The body is kept
byte for byte, so a recording (which keeps the stored JSON) carries the chain too, and a
re-execution that appends the same events appends the same hashes. `verify` walks a log in
order and names the first event whose chain does not hold.

A chain shows what was changed inside it; it cannot show that the newest events of a
stream were cut off (the shorter chain is whole). `Verified.digest` sums up every stream's
head, so a digest noted earlier shows a cut, or any change, since.

The log as a whole is chained too, in position order: its *tip* after an event is
`sha256(tip before \n position \n stream \n version \n topic \n sha256(stored bytes))`
(`link`). A store keeps a signed head, the position and tip of its newest event under an
HMAC of the store's secret (ledger.log_head), which a verify compares with the tip it
recomputes: a cut-off tail, a deleted stream or a replaced event no longer adds up to it.
"""

import hashlib
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

PREV_KEY = "prev_hash"
HASH_KEY = "hash"
GENESIS = ""  # the prev_hash of a stream's first event

_SEAL = re.compile(rb'(,?)"prev_hash":"([0-9a-f]{64}|)","hash":"([0-9a-f]{64})"\}\Z')
_TAIL = 200  # the seal's longest length, rounded up: only the end of the bytes is searched


def link(tip: str, position: int, stream: str, version: int, topic: str, state: bytes) -> str:
    """The log's tip once the event at `position` (stored as `state`) follows `tip`. The
    same sum is taken in SQL by the PostgreSQL append function (infra.pg_append)."""
    head = f"{tip}\n{position}\n{stream}\n{version}\n{topic}\n".encode()
    return hashlib.sha256(head + hashlib.sha256(state).digest()).hexdigest()


def digest(prev: str, stream: str, version: int, topic: str, body: bytes) -> str:
    """The hash of one event: its body, its place (stream, version), its type, and the hash
    of the event before it in its stream."""
    head = f"{prev}\n{stream}\n{version}\n{topic}\n".encode()
    return hashlib.sha256(head + body).hexdigest()


def seal(prev: str, stream: str, version: int, topic: str, body: bytes) -> tuple[bytes, str]:
    """The body with its chain keys appended, and its hash. `body` is a JSON object."""
    if not (body.startswith(b"{") and body.endswith(b"}")):
        raise ValueError(f"cannot seal stream {stream} version {version}: not a JSON object")
    own = digest(prev, stream, version, topic, body)
    sep = b"," if body != b"{}" else b""
    tail = f'"{PREV_KEY}":"{prev}","{HASH_KEY}":"{own}"}}'.encode()
    return body[:-1] + sep + tail, own


@dataclass(frozen=True)
class Sealed:
    """A stored event's body, the hash it chains to, and its own hash."""

    body: bytes
    prev: str
    hash: str


def unseal(state: bytes) -> Sealed | None:
    """The body and chain keys of sealed bytes; None when the bytes carry no seal."""
    start = max(0, len(state) - _TAIL)
    found = _SEAL.search(state, start)
    if found is None:
        return None
    body = state[:found.start()] + b"}"
    if not body.startswith(b"{") or (found.group(1) == b"") != (body == b"{}"):
        return None
    return Sealed(body, found.group(2).decode(), found.group(3).decode())


def hash_of(state: bytes) -> str | None:
    """`unseal(state).hash` (None when unsealed), without copying the body out: asked of
    every event a command reads, to note its stream's head."""
    found = _SEAL.search(state, max(0, len(state) - _TAIL))
    if found is None:
        return None
    end = found.start()  # the body is state[:end] + b"}"
    if end < 1 or not state.startswith(b"{") or (found.group(1) == b"") != (end == 1):
        return None
    return found.group(3).decode()


# --- verifying a log ----------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One event as stored: its log position, stream, version, topic and state bytes."""

    position: int
    stream: str
    version: int
    topic: str
    state: bytes


@dataclass(frozen=True)
class Broken:
    """The first event whose chain does not hold, and what is wrong with it."""

    position: int
    stream: str
    version: int
    kind: str  # "changed", "removed", "reordered", "unsealed" or "deleted"
    message: str


@dataclass(frozen=True)
class Verified:
    """What a chain check found: events and streams checked, and their digest."""

    events: int
    streams: int
    digest: str  # sha256 over every stream's head (stream, version, hash), sorted
    last: int = 0  # the position of the newest event (0: an empty log)
    tips: dict[int, str] = field(default_factory=dict, compare=False, repr=False)
    # the log's tip (see `link`) at each position asked for, and at `last`

    @property
    def tip(self) -> str:
        return self.tips.get(self.last, GENESIS)


def verify(entries: Iterable[Entry], *, contiguous: bool = False,
           marks: Collection[int] = ()) -> Verified | Broken:
    """Walk the log in order; the first broken link, or a summary when every link holds.
    `contiguous`: positions run 1, 2, 3… (SQLite's do), so a gap is a deleted event.
    The summary holds the log's tip at each position of `marks` that is in the log."""
    heads: dict[str, tuple[int, str]] = {}
    tips: dict[int, str] = {}
    count, last, tip = 0, 0, GENESIS
    for entry in entries:
        count += 1
        if contiguous and entry.position != last + 1:
            return _gap(entry, last)
        version, prev = heads.get(entry.stream, (0, GENESIS))
        broken = _check(entry, version, prev)
        if broken is not None:
            return broken
        sealed = unseal(entry.state)
        assert sealed is not None
        heads[entry.stream] = (entry.version, sealed.hash)
        tip = link(tip, entry.position, entry.stream, entry.version, entry.topic, entry.state)
        last = entry.position
        if last in marks:
            tips[last] = tip
    tips[last] = tip
    summary = "\n".join(f"{s}\n{v}\n{h}" for s, (v, h) in sorted(heads.items()))
    return Verified(count, len(heads), hashlib.sha256(summary.encode()).hexdigest(),
                    last, tips)


def _gap(entry: Entry, last: int) -> Broken:
    missing = (f"position {last + 1} is missing" if entry.position == last + 2 else
               f"positions {last + 1} to {entry.position - 1} are missing")
    return Broken(entry.position, entry.stream, entry.version, "deleted",
                  f"{missing}: the log jumps from {last} to {entry.position} (events were "
                  f"deleted; the next is stream {entry.stream}, version {entry.version})")


def _check(entry: Entry, version: int, last: str) -> Broken | None:
    where = f"event at position {entry.position} (stream {entry.stream}, version {entry.version})"

    def broken(kind: str, why: str) -> Broken:
        return Broken(entry.position, entry.stream, entry.version, kind, f"{where} {why}")

    sealed = unseal(entry.state)
    if sealed is None:
        return broken("unsealed", "carries no hash: it was written before tamper evidence, "
                                  "or its hash was stripped")
    if sealed.hash != digest(sealed.prev, entry.stream, entry.version, entry.topic, sealed.body):
        return broken("changed", "was changed: its content does not match its hash")
    if entry.version > version + 1:
        return broken("removed", f"follows version {version}: version {version + 1} is "
                                 "missing here (removed, or moved later)")
    if entry.version <= version:
        return broken("reordered", f"comes after version {version} of its stream "
                                   "(reordered or duplicated)")
    if sealed.prev != last:
        return broken("removed", "was chained to another event than the one before it in "
                                 "its stream (an earlier event was removed or replaced)")
    return None
