"""Checks of written text: a text of several lines (a body, a note) and a one-line text
(a title, a name, a label), each within a limit and free of characters a terminal acts on."""

import re

from planledger.ledger.domain import errors

# Characters that are no part of any written text: the C0 controls but tab and line
# breaks, DEL and the C1 controls. A terminal acts on them (moves the cursor, clears).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# What a one-line text (a title, a session name) must not hold besides: line breaks and
# tabs, which let it forge further lines of a listing, and the bidirectional controls,
# which show its characters in another order than they are stored.
_OFF_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                       "\u202a-\u202e\u2066-\u2069]")


def check_text(field: str, value: str, limit: int, *, required: bool) -> str:
    """A text of several lines (a body, a note): within `limit`, no control characters."""
    _check_size(field, value, limit, required)
    if (found := _CONTROL.search(value)) is not None:
        raise errors.InvalidInput(field, f"contains the control character "
                                         f"U+{ord(found.group()):04X}")
    return value


def check_line(field: str, value: str, limit: int, *, required: bool) -> str:
    """A one-line text (a title, a name): as `check_text`, and no line break, tab or
    bidirectional control either."""
    _check_size(field, value, limit, required)
    if (found := _OFF_LINE.search(value)) is not None:
        raise errors.InvalidInput(field, f"holds U+{ord(found.group()):04X}; a {field} is one "
                                         "line of plain text (no line breaks, tabs, control "
                                         "or bidirectional characters)")
    return value


def shown_on_one_line(value: str) -> str:
    """`value` safe to print as one line: each character a one-line text may not hold is
    written as its escape (`\\u202e`), for texts stored before they were refused."""
    return _OFF_LINE.sub(lambda found: f"\\u{ord(found.group()):04x}", value)


def _check_size(field: str, value: str, limit: int, required: bool) -> None:
    if required and not value.strip():
        raise errors.InvalidInput(field, "must not be empty")
    if len(value) > limit:
        raise errors.InvalidInput(field, f"is {len(value)} characters; the limit is {limit}")
