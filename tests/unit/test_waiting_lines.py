"""Who in a plan's line of waiters is told to try (api.waiting.Lines), decided without
threads: the rule behind first come, first served. A ticket told of a freed step tries
after it; a ticket told on a hunch (first in line on joining, or after a claim) is told of
the next freed step itself, so the next in line is not sent to race it for the one step."""

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from planledger.api.waiting import Lines, Ticket
from planledger.ledger.domain.ids import PlanSlug

PLAN = PlanSlug("work")
NOW = datetime(2026, 12, 3, tzinfo=UTC)


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    made = asyncio.new_event_loop()  # wake-ups are scheduled on it, never run
    yield made
    made.close()


def line_of(loop: asyncio.AbstractEventLoop, count: int) -> tuple[Lines, list[Ticket]]:
    lines, tickets = Lines(), [Ticket(loop) for _ in range(count)]
    for ticket in tickets:
        lines.join(PLAN, ticket)
    return lines, tickets


def told(tickets: list[Ticket]) -> list[bool]:
    return [t.told for t in tickets]


def test_the_first_to_join_tries_at_once_and_is_told_of_the_first_freed_step(
    loop: asyncio.AbstractEventLoop,
) -> None:
    lines, tickets = line_of(loop, 3)
    assert told(tickets) == [True, False, False]

    lines.freed(PLAN, 1)

    assert told(tickets) == [True, False, False]  # not the second as well
    assert lines.turn(PLAN, tickets[0], NOW) and not lines.turn(PLAN, tickets[1], NOW)


def test_each_freed_step_tells_one_more_in_order(loop: asyncio.AbstractEventLoop) -> None:
    lines, tickets = line_of(loop, 4)
    lines.turn(PLAN, tickets[0], NOW)
    lines.tried(PLAN, tickets[0], None)

    for _ in range(3):
        lines.freed(PLAN, 1)

    assert told(tickets) == [True, True, True, False]


def test_news_told_while_a_ticket_tries_and_claims_passes_on_as_a_hunch(
    loop: asyncio.AbstractEventLoop,
) -> None:
    lines, tickets = line_of(loop, 3)
    assert lines.turn(PLAN, tickets[0], NOW)  # trying
    lines.freed(PLAN, 1)  # told while it tries: it may have read before
    lines.leave(PLAN, tickets[0], served=True)  # it claimed (that step, likely)

    assert told(tickets[1:]) == [True, False]  # the new first tries at once
    lines.freed(PLAN, 1)
    assert told(tickets[1:]) == [True, False]  # and is the one told of the next step


def test_a_ticket_leaving_with_news_it_never_tried_on_tells_the_next(
    loop: asyncio.AbstractEventLoop,
) -> None:
    lines, tickets = line_of(loop, 3)
    lines.turn(PLAN, tickets[0], NOW)
    lines.tried(PLAN, tickets[0], None)
    lines.freed(PLAN, 1)
    lines.freed(PLAN, 1)
    assert told(tickets) == [True, True, False]

    lines.leave(PLAN, tickets[1], served=False)  # gave up, told of a step

    assert told([tickets[0], tickets[2]]) == [True, True]
