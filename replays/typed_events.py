"""Decoding an untrusted stored event into its own dataclass, every field's type checked.

The event store's decoder takes any JSON object for any event type: a title that is a
number, a missing field, a list where a mapping belongs would be stored as they are, and
break every later read of their stream. Here each field is validated (pydantic, strict)
against the annotations of the event's own dataclass, read from the class itself, so a
field added to the events (`actor`, say) is checked with no change here. A field with a
default may be absent: events written before it existed read it as its default.
"""

from dataclasses import MISSING, dataclass, fields, is_dataclass
from datetime import datetime
from functools import cache
from typing import Any, get_type_hints

from eventsourcing.persistence import StoredEvent
from pydantic import TypeAdapter, ValidationError

from planledger.ledger.chain import HASH_KEY, PREV_KEY
from planledger.ledger.notification_log import Decoder

# A stored event's place comes from its row (stream, version), never from its state.
PLACE = frozenset({"originator_id", "originator_version"})
CHAIN = frozenset({PREV_KEY, HASH_KEY})


class Mistyped(ValueError):
    """A state that is not its event type's: a field missing, unexpected or mistyped."""


@dataclass(frozen=True)
class _Field:
    name: str
    adapter: TypeAdapter[Any]
    required: bool


@cache
def _fields_of(cls: type) -> tuple[_Field, ...]:
    hints = get_type_hints(cls)
    return tuple(
        _Field(f.name, TypeAdapter(hints[f.name]),
               f.default is MISSING and f.default_factory is MISSING)
        for f in fields(cls) if f.name not in PLACE)


def decode_typed(decoder: Decoder, stored: StoredEvent, state: dict[str, Any]) -> object:
    """The stored event as its dataclass, as the store would decode it, once every field
    of `state` (its JSON) is known to be of its declared type; Mistyped otherwise."""
    try:
        event = decoder(stored)
    except Exception as error:  # the library's decoder fails in many ways on odd input
        raise Mistyped(f"cannot be decoded: {error}") from None
    cls = type(event)
    if not is_dataclass(cls):
        raise Mistyped("is not an event")
    placed = sorted(PLACE & set(state))
    if placed:
        raise Mistyped(f"its state carries {', '.join(placed)}, which only the log "
                       "assigns")
    values = {k: v for k, v in vars(event).items() if k not in PLACE}
    known = {f.name for f in _fields_of(cls)}
    unexpected = sorted(set(values) - known - CHAIN)
    if unexpected:
        raise Mistyped(f"unexpected field(s) {', '.join(unexpected)} for {cls.__name__}")
    for field in _fields_of(cls):
        if field.name not in values:
            if field.required:
                raise Mistyped(f"field {field.name} is missing")
            continue
        _check_value(field, values[field.name])
    return event


def _check_value(field: _Field, value: Any) -> None:
    try:
        field.adapter.validate_python(value, strict=True)
    except ValidationError as error:
        problem = error.errors()[0]
        where = "".join(f"[{p!r}]" for p in problem["loc"])
        raise Mistyped(f"field {field.name}{where}: {problem['msg']} "
                       f"(got {type(value).__name__})") from None
    if isinstance(value, datetime) and value.tzinfo is None:
        raise Mistyped(f"field {field.name}: a time without a time zone")
