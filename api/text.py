"""Strings that are text: a lone surrogate is refused at the door, naming where it is.

JSON lets a client write `"\\ud800"`, and Python's JSON decoder (and `surrogatepass`
decoding of raw bytes) hands it on as a one-character string that is not Unicode text: it
has no UTF-8 form, so the store, the response encoder or the terminal fails on it long
after the request was accepted. Every request schema and every MCP tool argument that
takes free text checks it here first, so the refusal is a 422 (a tool error) naming the
field, never a 500 or a dropped connection.
"""

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from planledger.ledger.domain import errors
from planledger.ledger.domain.plans import priority_from_text

_SURROGATE = re.compile("[\ud800-\udfff]")

MESSAGE = ("is not valid text: it holds a lone surrogate ({char} at character {at}); "
           "send UTF-8 text (a JSON \\uD800-\\uDFFF escape must be half of a pair)")


def lone_surrogate(value: Any) -> str | None:
    """Why `value` (a string, or a list or mapping of them) is not text; None if it is.
    Nested schemas are not searched: they check their own fields."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is None:
            return None
        return MESSAGE.format(char=f"\\u{ord(found.group()):04x}", at=found.start())
    if isinstance(value, Mapping):
        for key, item in value.items():
            # (repr writes a lone surrogate as its escape, so the message encodes)
            if (why := lone_surrogate(key)) is not None:
                return f"the key {key!r} {why}"
            if (why := lone_surrogate(item)) is not None:
                return f"[{key!r}] {why}"
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        for index, item in enumerate(value):
            if (why := lone_surrogate(item)) is not None:
                return f"[{index}] {why}"
    return None


def check_text(value: Any) -> Any:
    """`value` unchanged, or a validation error saying where its lone surrogate is (a
    pydantic validator: pydantic names the field)."""
    if (why := lone_surrogate(value)) is not None:
        raise PydanticCustomError("lone_surrogate", "{why}", {"why": why})
    return value



# For a choice (`Annotated[Literal[...], TEXT_FIRST]`): checked before the choice is, since
# "Input should be 'a' or 'b'" would not say that the text itself is broken.
TEXT_FIRST = BeforeValidator(check_text)


def _priority(value: Any) -> Any:
    """A priority given as text (`"1"`, beads' `"P1"`) as its number; any other value as
    it is, for the field's own type to judge. A boolean is refused: JSON's `true` is no
    priority, though Python counts it as 1."""
    if isinstance(value, bool):
        raise PydanticCustomError("priority", "is 0 (highest) .. 4, not true or false")
    if isinstance(value, str):
        try:
            return priority_from_text(value)
        except errors.InvalidInput as refused:
            raise PydanticCustomError("priority", "{why}", {"why": refused.problem}) from None
    return value


# For a priority (`Annotated[int | None, PRIORITY_TEXT]`): beads' `P0`..`P4` read too.
PRIORITY_TEXT = BeforeValidator(_priority)
