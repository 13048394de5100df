"""Events another layer appends in the same transaction as a decision.

The API records the answer of an idempotent write this way: the record lands atomically
with the decision's events or not at all, so no retry can find the write without its
answer, nor the answer without the write. A rider is set per call (a context variable),
so concurrent requests served by one process never share one.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from planledger.ledger.domain.claims import Decision

# Given the decision about to be appended, the extra events to append with it (or none).
Rider = Callable[[Decision], Sequence[Any]]

_current: ContextVar[Rider | None] = ContextVar("planledger_rider", default=None)


@contextmanager
def riding(rider: Rider) -> Iterator[None]:
    """Let `rider` add events to every decision appended inside the block."""
    token = _current.set(rider)
    try:
        yield
    finally:
        _current.reset(token)


def with_riders(decision: Decision) -> list[Any]:
    """The decision's events plus whatever the current rider adds to them."""
    rider = _current.get()
    extra = rider(decision) if rider is not None else ()
    return [*decision.events, *extra]
