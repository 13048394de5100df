"""Pages of a timeline add up to the timeline: a reader that holds what it read and asks
for what came since (`after=next_after`) ends up with what a reader of the whole has."""

import contextlib
from typing import Any

import pytest

from planledger.api.runtime import Runtime
from planledger.ledger.domain import errors
from planledger.projections.timeline import Entry, TimelineModel
from tests.integration.test_projection_rebuild import random_workload
from tests.support.fakes import FakeClock


def _merged(*pages: tuple[Entry, ...]) -> list[Entry]:
    by_position = {e.position: e for page in pages for e in page}
    return [by_position[p] for p in sorted(by_position)]


def _read_in_pages(model: TimelineModel, plan: str | None, limit: int) -> list[Entry]:
    pages, after = [], 0
    while True:
        page = model.timeline(plan=plan, after=after, limit=limit)
        pages.append(page.entries)
        if not page.more:
            return _merged(*pages)
        assert page.next_after > after
        after = page.next_after


@pytest.mark.parametrize("limit", [1, 7, 50])
def test_pages_of_any_size_add_up_to_the_whole(
    runtime: Runtime, clock: FakeClock, limit: int
) -> None:
    random_workload(runtime, clock, seed=21, commands=150)
    model = TimelineModel(runtime.store)
    for plan in [None, *runtime.reads.plan_slugs()]:
        whole = model.timeline(plan=plan)
        assert _read_in_pages(model, plan, limit) == list(whole.entries)


def test_what_came_since_completes_what_a_reader_held(runtime: Runtime, clock: FakeClock) -> None:
    # A session that starts first but acts on the plans only after the reader's first
    # read: its start, long before that read, must reach the reader with its first act.
    waiting = runtime.ledger.start_session("waiting").id
    random_workload(runtime, clock, seed=22, commands=60)
    plans = runtime.reads.plan_slugs()
    model = TimelineModel(runtime.store)
    held = {plan: model.timeline(plan=plan) for plan in plans}
    random_workload(runtime, clock, seed=23, commands=60)
    for plan in plans:
        with contextlib.suppress(errors.LedgerError):
            runtime.ledger.claim_next(plan, waiting)
    for plan in plans:
        since = model.timeline(plan=plan, after=held[plan].next_after)
        whole = model.timeline(plan=plan)
        assert _merged(held[plan].entries, since.entries) == list(whole.entries)
        assert {lane.session_id for lane in held[plan].lanes + since.lanes} == {
            lane.session_id for lane in whole.lanes}
    started = [e for e in model.timeline(plan=plans[0]).entries
               if e.kind == "session_started" and e.session_id == waiting]
    assert started, "the late session acted on the plan: its start belongs to the timeline"


def _paged(model: TimelineModel, plan: str, limit: int, **chosen: Any) -> list[Entry]:
    pages, after, more = [], 0, True
    while more:
        page = model.timeline(plan=plan, after=after, limit=limit, **chosen)
        pages.append(page.entries)
        after, more = page.next_after, page.more
    return _merged(*pages)


@pytest.mark.parametrize("limit", [1, 9])
def test_pages_of_some_sessions_lanes_add_up_to_those_lanes_of_the_whole(
    runtime: Runtime, clock: FakeClock, limit: int
) -> None:
    random_workload(runtime, clock, seed=24, commands=150)
    model = TimelineModel(runtime.store)
    for plan in runtime.reads.plan_slugs():
        whole = model.timeline(plan=plan)
        lanes = tuple(lane.session_id for lane in whole.lanes if lane.session_id)[:2]
        assert lanes, "sessions acted on every plan"
        theirs = [e for e in whole.entries if e.session_id in lanes]
        assert list(model.timeline(plan=plan, sessions=lanes).entries) == theirs
        assert _paged(model, plan, limit, sessions=lanes) == theirs


def test_pages_within_a_time_window_add_up_to_the_window(
    runtime: Runtime, clock: FakeClock
) -> None:
    random_workload(runtime, clock, seed=25, commands=150)
    model = TimelineModel(runtime.store)
    for plan in runtime.reads.plan_slugs():
        times = sorted(e.at for e in model.timeline(plan=plan).entries)
        since, until = times[len(times) // 3], times[2 * len(times) // 3]
        window = model.timeline(plan=plan, since=since, until=until).entries
        assert 0 < len(window) < len(times)
        assert all(since <= e.at <= until for e in window)
        assert _paged(model, plan, 4, since=since, until=until) == list(window)
