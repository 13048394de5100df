"""One line of an untrusted JSON Lines file, parsed without ever raising RecursionError.

Python's JSON decoder recurses once per nested array or object: a line of 100,000 `[`
exhausts the interpreter's stack, and a line nested just under that limit still breaks
whatever walks the value next (re-encoding it, validating it). Nothing a planledger file
holds is nested more than a few levels, so a line nested deeper than `MAX_NESTING` is
refused as a whole, whatever the decoder would have done with it.
"""

import json
from typing import Any

MAX_NESTING = 32


class BadLine(ValueError):
    """A line that is not JSON, or nested too deeply; the message says which."""


def parse_line(text: str) -> Any:
    """The line's JSON value; BadLine when it is not JSON or nests deeper than allowed."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadLine(f"not JSON ({error.msg})") from None
    except RecursionError:
        raise BadLine(f"nested more than {MAX_NESTING} levels deep") from None
    if nesting(value) > MAX_NESTING:
        raise BadLine(f"nested more than {MAX_NESTING} levels deep") from None
    return value


def nesting(value: Any) -> int:
    """How deeply arrays and objects nest in `value` (a scalar: 0), walked without
    recursion."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            return deepest
        pending.extend((child, depth) for child in children)
    return deepest
