"""Long loops that take turns with other threads at the interpreter lock.

A thread running Python keeps the interpreter lock until another thread has waited for
it for the switch interval (5 ms by default). A thread that answers requests (the
server's event loop) lets go of the lock each time it waits for the network or the
database. Beside a busy thread, it then waits that whole interval again after each wait.
So a loop over many items lets go of the lock between slices of them. A waiting thread
takes the lock at once, and the loop pays only a few microseconds a slice.
"""

import time
from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

TURN = 16  # items between turns: a slice short enough not to hold up a waiting thread


def turns(count: int, size: int = TURN) -> Iterator[slice]:
    """Slices of `size` over `count` items, letting other threads run between them."""
    if count <= size:  # one slice, no turn: most appends are one or two events
        return iter((slice(0, count),))
    return _turns(count, size)


def _turns(count: int, size: int) -> Iterator[slice]:
    for start in range(0, count, size):
        if start:
            time.sleep(0)  # lets go of the interpreter lock; a waiting thread takes it
        yield slice(start, start + size)


def each_in_turns(items: Sequence[T], size: int = TURN) -> Iterator[T]:
    """Each of `items`, letting other threads run after every `size` of them."""
    if len(items) <= size:
        return iter(items)
    return (item for part in _turns(len(items), size) for item in items[part])
