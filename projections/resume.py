"""What a checkpoint holds: a read model's view, tied to the log it was folded from.

A saved state is the fingerprint of the event at its position, a newline, and the pickled
`LedgerView`. It is restored only where the log still holds that very event at that
position: a log replaced by another, truncated, or restored from an older copy has some
other event there, or none, and its reader folds from the start instead.
"""

import hashlib
import io
import pickle

from eventsourcing.persistence import Notification

from ledger.store import EventStore
from projections.view import FORMAT, LedgerView


def fingerprint(note: Notification) -> str:
    """What identifies the event at a log position: its stream, version, type and body."""
    digest = hashlib.sha256(f"{note.originator_id}\0{note.originator_version}\0"
                            f"{note.topic}\0".encode())
    digest.update(note.state)
    return digest.hexdigest()


def tip_at(store: EventStore, position: int) -> str | None:
    """The fingerprint of the event at `position` in the store's log (None: no event)."""
    at = store.recorder.select_notifications(start=position, limit=1)
    return fingerprint(at[0]) if at and at[0].id == position else None


def saved_state(view: LedgerView, tip: str) -> memoryview:
    """The bytes to save for `view`, whose last event has the fingerprint `tip`: pickled
    straight behind the tip, in one buffer (a state is tens of MB on a long log, and every
    copy of it stays in the process's heap afterwards)."""
    buffer = io.BytesIO()
    buffer.write(tip.encode() + b"\n")
    pickle.dump(view, buffer, protocol=pickle.HIGHEST_PROTOCOL)
    return buffer.getbuffer()


def restored_view(store: EventStore, position: int, saved: bytes) -> LedgerView | None:
    """The view saved at `position`, if it was taken of this log and this version can
    read it; else None."""
    end = saved.find(b"\n")
    tip = saved[:end].decode(errors="replace") if end >= 0 else ""
    if tip_at(store, position) != tip:
        return None
    try:  # our own file, written by saved_state above; read in place, not copied
        view = pickle.loads(memoryview(saved)[end + 1:])
    except Exception:  # a state this version cannot read
        return None
    if isinstance(view, LedgerView) and view.format == FORMAT and view.position == position:
        return view
    return None
