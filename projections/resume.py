"""What a checkpoint holds, and when a process believes one.

A checkpoint is the bytes

    MAGIC | tag (32 bytes) | header (one line of JSON) | state (JSON)

- MAGIC names the format: anything else (an older version's pickled checkpoint) is never
  read further.
- The header ties the state to the log it was folded from: the store's name, the
  fingerprints of the log's first event and of the event at the checkpoint's position,
  and a digest of the state's shape (the view's annotated attributes and the states'
  dataclass fields: a field added changes it).
- The state is the `LedgerView`'s attributes as `projections.codec` data: JSON, built
  back into exactly the annotated types and checked on the way, so reading it runs no
  code whatever it holds.
- The tag is an HMAC-SHA256 of everything else under a key derived from the store's
  secret for this purpose only: whoever can write the checkpoint file or tables without
  holding the secret cannot make one that a process resumes from.

`restored_view` checks the format, then the tag, then the header against this log, then
decodes; the first check that fails raises `UnusableCheckpoint` saying which, and the
reader folds the log from the start instead.
"""

import hashlib
import hmac
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from planledger.ledger.notification_log import LogSource
from planledger.projections.codec import Data, record_of
from planledger.projections.log import page_after, paused_gc
from planledger.projections.view import LedgerView

if TYPE_CHECKING:
    from eventsourcing.persistence import Notification

# 5: a step's history holds its notes (StepNoted); a view saved by 4 lacks them.
MAGIC = b"planledger-checkpoint/5\n"
TAG_BYTES = hashlib.sha256().digest_size
KEY_PURPOSE = b"planledger read-model checkpoint"
STATE = record_of(LedgerView, LedgerView.restored)
SHAPE = hashlib.sha256(STATE.description.encode()).hexdigest()
FIRST = 1  # the log's first position: its event names the log


class UnusableCheckpoint(Exception):
    """A saved checkpoint this process will not resume from; the message says why."""


def checkpoint_key(secret: bytes) -> bytes:
    """The key checkpoints are authenticated under: the store's secret, through an HMAC
    labelled for this purpose, so a checkpoint's tag is never valid as anything else the
    secret signs (session tokens, log heads)."""
    return hmac.new(secret, KEY_PURPOSE, hashlib.sha256).digest()


def fingerprint(note: "Notification") -> str:
    """What identifies the event at a log position: its stream, version, type and body."""
    digest = hashlib.sha256(f"{note.originator_id}\0{note.originator_version}\0"
                            f"{note.topic}\0".encode())
    digest.update(note.state)
    return digest.hexdigest()


def tip_at(store: LogSource, position: int) -> str | None:
    """The fingerprint of the event at `position` in the store's log (None: no event)."""
    at = page_after(store, position - 1, limit=1)
    return fingerprint(at[0]) if at and at[0].id == position else None


@dataclass(frozen=True)
class Binding:
    """Which log, and which point of it, a state was folded to."""

    store: str
    first: str  # the fingerprint of the log's first event
    position: int
    tip: str  # the fingerprint of the event at `position`
    shape: str = SHAPE


def binding_at(store: LogSource, position: int) -> Binding | None:
    """The binding of a state folded to `position` of the store's log (None: the log has
    no event there)."""
    tip = tip_at(store, position)
    first = tip if position == FIRST else tip_at(store, FIRST)
    if tip is None or first is None:
        return None
    return Binding(store.name, first, position, tip)


def state_data(view: LedgerView) -> Data:
    """The view's state as plain data: a copy sharing nothing mutable with the view, so
    only this part of a save holds up the view's readers."""
    with paused_gc():  # the lists built here are dropped whole, after the save
        return STATE.encode(view)


def saved_state(state: Data, binding: Binding, key: bytes) -> bytes:
    """The bytes to save for a view's `state` (state_data), folded to the point `binding`
    names, tagged under `key` (see checkpoint_key)."""
    header = json.dumps(asdict(binding), separators=(",", ":")).encode() + b"\n"
    body = json.dumps(state, separators=(",", ":"), check_circular=False,
                      allow_nan=False).encode()
    tag = hmac.new(key, MAGIC, hashlib.sha256)
    tag.update(header)
    tag.update(body)
    return b"".join((MAGIC, tag.digest(), header, body))


def restored_view(store: LogSource, position: int, saved: bytes, key: bytes) -> LedgerView:
    """The view saved at `position` of the store's log, once every check has passed (see
    the module's doc); UnusableCheckpoint naming the check that failed."""
    if not saved.startswith(MAGIC):
        raise UnusableCheckpoint("it is not in this version's format (an older version's, "
                                 "or not a checkpoint)")
    signed = memoryview(saved)[len(MAGIC) + TAG_BYTES:]
    tag = hmac.new(key, MAGIC, hashlib.sha256)
    tag.update(signed)
    if not hmac.compare_digest(saved[len(MAGIC):len(MAGIC) + TAG_BYTES], tag.digest()):
        raise UnusableCheckpoint("its MAC does not match: it was not saved under this "
                                 "store's secret, or it was altered since")
    end = saved.find(b"\n", len(MAGIC) + TAG_BYTES)
    if end < 0:
        raise UnusableCheckpoint("it has no header")
    try:
        header = json.loads(saved[len(MAGIC) + TAG_BYTES:end])
        found = Binding(**header) if isinstance(header, dict) else None
    except (ValueError, TypeError) as error:
        raise UnusableCheckpoint(f"its header does not read: {error}") from None
    _check_binding(found, store, position)
    try:  # a tagged state is our own, but decoding it is checked all the same
        with paused_gc():  # hundreds of thousands of objects that all live on
            view = STATE.decode(json.loads(saved[end + 1:]), "state")
    except (ValueError, TypeError, RecursionError, OverflowError) as error:
        raise UnusableCheckpoint(f"its state does not decode: {error}") from None
    if not isinstance(view, LedgerView) or view.position != position:
        raise UnusableCheckpoint(f"its state is not a view at position {position}")
    return view


def _check_binding(found: Binding | None, store: LogSource, position: int) -> None:
    if found is None:
        raise UnusableCheckpoint("its header is not a binding")
    if found.shape != SHAPE:
        raise UnusableCheckpoint("it was saved by a version whose state has another shape")
    if found.store != store.name or found.position != position:
        raise UnusableCheckpoint(f"it was saved for {found.store!r} at position "
                                 f"{found.position}, not {store.name!r} at {position}")
    if found != binding_at(store, position):
        raise UnusableCheckpoint(f"it was taken of another log: this log's events at "
                                 f"positions {FIRST} and {position} are not the ones it "
                                 "was folded from")
