"""Pages of a plan's timeline, served from an index that grows as entries are added.

With the index, reading what came after a position costs what it returns, not what the
plan holds.

A plan's timeline is its entries plus the marks (session started, session ended) of
every session that acted on the plan. For each plan the index keeps its entries, those
marks, and where each session first acted on it, all in position order. Entries arrive
in log order. A session's earlier marks join the plan's marks when the session first
acts on that plan.
"""

import bisect
import heapq
import itertools
from collections.abc import Callable, Iterable
from datetime import datetime

from planledger.projections.timeline_entries import Entry

MARKS = ("session_started", "session_ended")

Chosen = Callable[[Entry], bool]


class PlanEntries:
    """One plan's entries, the marks of the sessions that acted on it, and each such
    session's first act on it (position, session), all in position order."""

    __slots__ = ("acts", "first_act", "first_acts", "marks")

    def __init__(self) -> None:
        self.acts: list[Entry] = []
        self.marks: list[Entry] = []
        self.first_act: dict[str | None, int] = {}  # by session
        self.first_acts: list[tuple[int, str | None]] = []


class EntryIndex:
    """Entries by plan and marks by session, as the timeline model adds them."""

    def __init__(self) -> None:
        self._plans: dict[str, PlanEntries] = {}
        self._marks: dict[str | None, list[Entry]] = {}  # session started/ended, by session
        self._acted_on: dict[str | None, list[PlanEntries]] = {}  # by session

    def add(self, entry: Entry) -> None:
        if entry.plan is not None:
            self._add_act(entry, entry.plan)
        if entry.kind in MARKS:
            self._marks.setdefault(entry.session_id, []).append(entry)
            for plan in self._acted_on.get(entry.session_id, ()):
                plan.marks.append(entry)

    def _add_act(self, entry: Entry, slug: str) -> None:
        plan = self._plans.get(slug)
        if plan is None:
            plan = self._plans[slug] = PlanEntries()
        plan.acts.append(entry)
        session = entry.session_id
        if session not in plan.first_act:  # its first act on the plan: its marks so far join
            plan.first_act[session] = entry.position
            plan.first_acts.append((entry.position, session))
            self._acted_on.setdefault(session, []).append(plan)
            for mark in self._marks.get(session, ()):
                bisect.insort(plan.marks, mark, key=position_of)

    def page(
        self, slug: str, sessions: tuple[str, ...], since: datetime | None,
        until: datetime | None, after: int, limit: int | None,
    ) -> tuple[list[Entry], bool]:
        """The plan's entries after `after` (at most `limit`, and whether more follow) of
        `sessions` (all when empty) within [since, until], with the start of each session
        whose first act on the plan is on the page (see TimelineModel.timeline)."""
        plan = self._plans.get(slug)
        if plan is None:
            return [], False
        if since is None and until is None:
            return self._page_after(plan, sessions, after, limit)
        return self._page_within(plan, lambda e: chosen(e, sessions, since, until),
                                 after, limit)

    def _page_after(
        self, plan: PlanEntries, sessions: tuple[str, ...], after: int, limit: int | None
    ) -> tuple[list[Entry], bool]:
        """Bisected: the entries and marks after `after`, and the starts of the sessions
        whose first act is on the page (choosing sessions moves no session's first act)."""
        acts, marks = _later(plan.acts, after), _later(plan.marks, after)
        merged: Iterable[Entry] = heapq.merge(acts, marks, key=position_of)
        if sessions:
            merged = (e for e in merged if e.session_id in sessions)
        page, more = take(merged, limit)
        last = page[-1].position if page else after
        firsts = plan.first_acts[bisect.bisect_right(plan.first_acts, after, key=_first)
                                 :bisect.bisect_right(plan.first_acts, last, key=_first)]
        starts = [m for _, s in firsts if not sessions or s in sessions
                  for m in self._marks.get(s, ())
                  if m.kind == "session_started" and m.position <= after]
        return sorted(starts + page, key=position_of) if starts else page, more

    def _page_within(
        self, plan: PlanEntries, keep: Chosen, after: int, limit: int | None
    ) -> tuple[list[Entry], bool]:
        """A time window moves each session's first act to its first one in the window:
        the plan's entries are filtered whole."""
        acts = [e for e in plan.acts if keep(e)]
        first_act: dict[str | None, int] = {}
        for e in acts:
            first_act.setdefault(e.session_id, e.position)
        marks = [m for s in first_act for m in self._marks.get(s, ()) if keep(m)]
        merged = sorted(acts + marks, key=position_of)
        page, more = take((e for e in merged if e.position > after), limit)
        last = page[-1].position if page else after
        starts = [m for m in marks if m.kind == "session_started"
                  and m.position <= after < first_act[m.session_id] <= last]
        return sorted(starts + page, key=position_of), more


def position_of(entry: Entry) -> int:
    return entry.position


def _first(first_act: tuple[int, str | None]) -> int:
    return first_act[0]


def _later(entries: list[Entry], after: int) -> list[Entry]:
    return entries[bisect.bisect_right(entries, after, key=position_of):]


def take(entries: Iterable[Entry], limit: int | None) -> tuple[list[Entry], bool]:
    """The first `limit` entries (all when None), and whether any were left."""
    if limit is None:
        return list(entries), False
    page = list(itertools.islice(entries, limit + 1))
    return page[:limit], len(page) > limit


def chosen(
    entry: Entry, sessions: tuple[str, ...], since: datetime | None, until: datetime | None
) -> bool:
    if sessions and entry.session_id not in sessions:
        return False
    if since is not None and entry.at < since:
        return False
    return until is None or entry.at <= until
