"""What the store holds, by the fixed name each kind is stored under, and how a stored
event's JSON object becomes the event again.

Shared by the store's own decoding (ledger.sealing's mapper, through the `eventsourcing`
library) and by a process that reads an embedded store's file without the library
(infra.sqlite_reading): both make an event from its object the same way here.
"""

from typing import Any

from planledger.ledger.answers import AnswerRecorded
from planledger.ledger.chain import HASH_KEY, PREV_KEY
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.state import StepSnapshot

# Everything the store holds, by the name it is stored under (its TOPIC), so that reading a
# log resolves every name to its class without importing a module by the name (which need
# not be where the class lives now).
STORED_KINDS: tuple[type, ...] = (*ev.LedgerEvent.__subclasses__(), StepSnapshot,
                                  AnswerRecorded)
BY_TOPIC: dict[str, type] = {kind.TOPIC: kind for kind in STORED_KINDS}  # type: ignore[attr-defined]

_new = object.__new__
_set = object.__setattr__


def event_from(cls: type, state: dict[str, Any], originator_id: object,
               originator_version: int, class_version: int) -> Any:
    """The event of type `cls` whose stored object (decoded JSON) is `state`, at its
    stream and version; `state` becomes the event's attributes (it is taken, not copied).
    Its chain keys come off (ledger.chain: they are the store's, not the event's), and an
    object stored by an older version of its class is upcast first (`upcast_vN_vM`, the
    library's convention). Made without running `__init__`, as the library makes it."""
    state.pop(HASH_KEY, None)
    state.pop(PREV_KEY, None)
    state["originator_id"] = originator_id
    state["originator_version"] = originator_version
    from_version = state.pop("class_version", 1)
    while from_version < class_version:
        getattr(cls, f"upcast_v{from_version}_v{from_version + 1}")(state)
        from_version += 1
    event: Any = _new(cls)
    _set(event, "__dict__", state)
    return event
