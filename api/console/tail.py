"""The newest part of a plan's timeline: what the console reads first.

A plan's whole timeline is an entry per event (a 20,000-step plan's is megabytes and
seconds); the page draws only the newest few hundred, then reads what came since. The
first entry to read is found from the log positions the read model keeps for the plan,
so nothing older is described.
"""

import heapq
from itertools import chain

from planledger.api import reads
from planledger.api.schemas import TimelineOut
from planledger.api.service import Service
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug

LAST = 400  # entries: as many as the page draws


def timeline_tail(service: Service, slug: str, last: int = LAST) -> TimelineOut:
    """The plan's timeline from its `last`-th newest event on (fewer entries when some of
    those events are not the plan's entries)."""
    with service.runtime.reads.reading() as (view, _):
        if not view.knows(PlanSlug(slug)):
            raise errors.UnknownPlan(slug[:100])
        newest = heapq.nlargest(last, chain(*view.positions_of(PlanSlug(slug))))
    after = newest[-1] - 1 if len(newest) == last else 0
    return reads.timeline(service.timelines, slug, after=after)
