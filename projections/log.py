"""Read the notification log for the read side.

This module gives decoded pages after a position, and the events at chosen positions.
ledger.notification_log reads the pages; this module only walks them. The garbage
collector is paused while a page is folded."""

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from planledger.ledger.notification_log import (
    PAGE,
    LogSource,
    Positioned,
    decode,
    page_after,
    page_from,
)

__all__ = ["PAGE", "Positioned", "at_positions", "decode", "page_after", "page_from", "pages",
           "paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while a page is decoded and folded. A page makes
    thousands of small objects that mostly live on (events, states, index entries), and
    scanning them again and again as "young" is a large share of a rebuild (figure:
    bench/findings.md). It is
    switched back on after the page (only if it was on), so cycles made meanwhile by other
    threads wait at most one page to be collected."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def pages(
    store: LogSource, after: int = 0, limit: int = PAGE, stop: int | None = None
) -> Iterator[list[Positioned]]:
    """Decoded pages of the log after `after` up to `stop` (or its end)."""
    while True:
        notes = page_after(store, after, limit, stop)
        if notes:
            yield decode(store, notes)
            after = notes[-1].id
        if len(notes) < limit:
            return


def at_positions(store: LogSource, positions: Sequence[int]) -> list[Positioned]:
    """The events at the given (ascending) positions; consecutive ones in one read."""
    found: list[Positioned] = []
    for first, last in _runs(positions):
        found += decode(store, page_after(store, first - 1, last - first + 1, stop=last))
    return found


def _runs(positions: Sequence[int]) -> Iterator[tuple[int, int]]:
    if not positions:
        return
    first = last = positions[0]
    for position in positions[1:]:
        if position != last + 1:
            yield first, last
            first = position
        last = position
    yield first, last
