"""A claim-next that waits for a step instead of answering "nothing ready" at once.

The handler never waits (`ledger.claim_handlers.claim_next` answers what it finds); this
wraps it at the service. A call with `wait_seconds` joins its plan's line and tries; while
nothing is claimable it sleeps until its plan's step may have been freed, the plan's next
lease lapses, or its time is up, and then tries again. Time up, it answers as a call that
never waited does (`reason`: all_held, all_blocked, ...). A finished plan answers at once:
nothing is left in it to wait for.

- Fair: each plan's waiters form a line in arrival order. An event that may free n steps
  wakes the n longest waiting (they claim side by side); a lapse wakes the first, which
  hands the turn to the next when it claims; so the longest waiting are served first (in
  this process: a line does not span servers). A caller that does not wait is not in
  line: it tries as it always did.
- No polling: a waiter sleeps on an event of its own (`Ticket`), set by the read model as
  it applies an event that may free a step of the plan (`projections.wakeups`: this
  process's appends at once, other processes' and replicas' through the log's follower);
  the first in line also sleeps only until the plan's next lease lapses, which writes
  nothing to the log to wake anyone. No thread is held while waiting: on the event loop,
  a waiter is a coroutine; the tries run on worker threads.
- Time comes from the ledger's clock: deadlines and lapses are judged by it, and a test
  that moves an injected clock calls `clock_moved` to cut the sleeps short.
- Idempotent: tries that find nothing record nothing; only the answer given (a claim, a
  refusal, or the time-up answer) is recorded under the caller's key (see `Attempt`).
- A caller that leaves (an HTTP client that disconnects, an MCP call its client gives up
  on) cancels its wait and leaves the line: it is granted nothing more. A try already
  claiming runs to its end (it runs on a thread, inside the store's write, and cannot stop
  half-way); a claim it made for the departed caller is let go of at once (`Unclaim`), so
  the step is free for the next agent rather than held for a lease nobody heard of.
"""

import asyncio
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol, TypeVar

import anyio
from anyio import to_thread
from pydantic import BaseModel

from planledger.ledger.commands import ClaimNext
from planledger.ledger.domain.ids import PlanSlug
from planledger.ledger.ports import Clock
from planledger.projections.readmodel import ReadModel
from planledger.projections.wakeups import Wakeups, next_lapse

T = TypeVar("T")

# One try of the call's claim-next: `final` False answers None while nothing is claimable
# (then nothing is recorded), else the answer (a claim, a refusal raised, or, `final`
# True, the "nothing ready" answer, recorded under the caller's key if it sent one).
Attempt = Callable[[bool], BaseModel | None]
# Let go of the claim in an answer whose caller left before it was told of it.
Unclaim = Callable[[BaseModel], None]


class Run(Protocol):
    """Where blocking work runs: a worker thread (on an event loop), or inline."""

    def __call__(self, work: Callable[[], T], /) -> Awaitable[T]: ...


async def on_a_thread(work: Callable[[], T]) -> T:
    return await to_thread.run_sync(work)


async def inline(work: Callable[[], T]) -> T:
    return work()


class Ticket:
    """One waiting call's place in line and the event it sleeps on, set from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._woken = asyncio.Event()
        self.told = False  # a step of its plan may have been freed: try
        # Told to try on no news of a freed step (first in line on joining, or after a
        # claim): news of one is told to it first, not to the next in line as well.
        self.hunch = False
        self.trying = False

    def wake(self) -> None:
        self._loop.call_soon_threadsafe(self._woken.set)

    def reset(self) -> None:
        """Forget earlier wake-ups (on its loop): what happens next wakes it again."""
        self._woken.clear()

    async def sleep(self, seconds: float) -> None:
        with anyio.move_on_after(seconds):
            await self._woken.wait()


@dataclass
class _Line:
    """One plan's waiters, first come first; `due`: when the first should try again
    (the plan's next lease lapse), None when no lease is live."""

    tickets: deque[Ticket] = field(default_factory=deque)
    due: datetime | None = None


class Lines:
    """Every plan's line of waiters; told by the read model (`projections.wakeups.Signals`).

    A ticket tries when told. An event that may have freed n steps tells the n longest
    waiting not told yet: they claim side by side rather than one after another, and the
    longest waiting are the ones served."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._moved = threading.Condition(self._lock)  # someone joined or left a line
        self._lines: dict[PlanSlug, _Line] = {}

    def join(self, plan: PlanSlug, ticket: Ticket) -> None:
        with self._lock:
            line = self._lines.setdefault(plan, _Line())
            line.tickets.append(ticket)
            ticket.told = ticket.hunch = len(line.tickets) == 1  # first: try at once
            self._moved.notify_all()

    def leave(self, plan: PlanSlug, ticket: Ticket, served: bool) -> None:
        """The ticket is answered (`served`: with a claim) or gave up. A wake-up it was
        told and did not try on is told to another (a hunch, to the first in line). After
        a claim, the first in line tries at once, on a hunch: what woke the one that
        claimed (a lapse, say, or news told while it tried, which may be of the step it
        took) may have freed more than one step. Else a new first in line times its sleep
        to the plan's next lapse. (A ticket that never joined is ignored.)"""
        with self._lock:
            line = self._lines.get(plan)
            if line is None or ticket not in line.tickets:
                return
            first = line.tickets[0] is ticket
            line.tickets.remove(ticket)
            if not line.tickets:
                del self._lines[plan]
            elif ticket.told and not (served or ticket.hunch):
                self._tell(line, 1)
            elif (served and (first or ticket.told)) or ticket.hunch:
                self._hint(line.tickets[0])
            elif first:
                line.tickets[0].wake()
            self._moved.notify_all()

    def waiting(self, plan: PlanSlug, count: int, timeout: float) -> bool:
        """Block until `count` callers wait on the plan; False after `timeout` seconds."""
        with self._moved:
            return self._moved.wait_for(lambda: self._count(plan) == count, timeout)

    def _count(self, plan: PlanSlug) -> int:
        line = self._lines.get(plan)
        return len(line.tickets) if line is not None else 0

    def turn(self, plan: PlanSlug, ticket: Ticket, now: datetime) -> bool:
        """Whether the ticket tries now: told, or first in line and due. Resets its event,
        so anything telling it from here on wakes it."""
        with self._lock:
            ticket.reset()
            line = self._lines[plan]
            first = line.tickets[0] is ticket
            due = first and line.due is not None and now >= line.due
            if not (ticket.told or due):
                return False
            ticket.told, ticket.hunch, ticket.trying = False, False, True
            if first:
                line.due = None  # its try finds the next lapse
            return True

    def tried(self, plan: PlanSlug, ticket: Ticket, lapse: datetime | None) -> None:
        """The ticket found nothing; the plan's next lease lapses at `lapse`."""
        with self._lock:
            ticket.trying = False
            if lapse is not None:
                self._sooner(self._lines[plan], lapse)

    def seconds_to_sleep(self, plan: PlanSlug, ticket: Ticket, deadline: datetime,
                         now: datetime) -> float:
        """Until the ticket's deadline, or for the first in line the next lapse if sooner."""
        with self._lock:
            line = self._lines[plan]
            until = deadline
            if line.tickets[0] is ticket and line.due is not None:
                until = min(until, line.due)
        return max(0.0, (until - now).total_seconds())

    # --- told by the read model (under its lock): never blocks ------------------------

    def freed(self, plan: PlanSlug | None, count: int) -> None:
        """`count` steps of `plan` (None: of any plan) may have become claimable."""
        with self._lock:
            if plan is None:
                for line in self._lines.values():
                    self._tell(line, count)
            elif (found := self._lines.get(plan)) is not None:
                self._tell(found, count)

    def leased(self, plan: PlanSlug | None, until: datetime) -> None:
        """A lease of `plan` (None: one whose end may free a step of any plan) ends then."""
        with self._lock:
            lines = self._lines.values() if plan is None else (
                [self._lines[plan]] if plan in self._lines else [])
            for line in lines:
                self._sooner(line, until)

    def wake_all(self) -> None:
        """Every waiter looks at the clock again (it moved more than a sleep knows)."""
        with self._lock:
            for line in self._lines.values():
                for ticket in line.tickets:
                    ticket.wake()

    @staticmethod
    def _tell(line: _Line, count: int) -> None:
        """Tell the `count` longest waiting not told of a step yet. One told while it
        tries tries again: it may have read the plan before what it is told of. One told
        on a hunch is told first (else it and the next would race for the one step, and
        the next could win)."""
        for ticket in [t for t in line.tickets if t.hunch or not t.told][:count]:
            ticket.told, ticket.hunch = True, False
            ticket.wake()

    @staticmethod
    def _hint(ticket: Ticket) -> None:
        """Tell the ticket to try (again, if it is trying) on a hunch, unless it is told
        of a step already: then its try comes after anyway."""
        if not ticket.told:
            ticket.told = ticket.hunch = True
            ticket.wake()

    @staticmethod
    def _sooner(line: _Line, lapse: datetime) -> None:
        if line.due is None or lapse < line.due:
            line.due = lapse
            line.tickets[0].wake()  # to sleep until then, not until its deadline


async def _to_the_end(run: Run, work: Callable[[], T], unclaim: Unclaim | None,
                      answer_in: Callable[[T], BaseModel | None]) -> T:
    """`work`'s result, run to its end even if the caller is cancelled meanwhile (both
    anyio's cancel scopes and a task's own `cancel` reach here); cancelled, the answer in
    it (`answer_in`) goes to `unclaim` and the cancellation goes on."""
    running = asyncio.ensure_future(run(work))
    result, left = await _uncancelled(running)
    if left is None:
        return result
    answer = answer_in(result)
    if answer is not None and unclaim is not None:
        await _uncancelled(asyncio.ensure_future(run(lambda: unclaim(answer))))
    raise left


async def _uncancelled(running: "asyncio.Future[T]") -> tuple[T, BaseException | None]:
    """`running`'s result once it ends, and the cancellation that reached its awaiter
    meanwhile (None: none did; with one, its error gives way to the cancellation). A cancel
    scope keeps cancelling its task until the task leaves it, so each is caught until the
    work is done."""
    left: BaseException | None = None
    while not running.done():
        try:
            await asyncio.wait({running})
        except asyncio.CancelledError as cancelled:
            left = cancelled
    if left is not None and (running.cancelled() or running.exception() is not None):
        raise left
    return running.result(), left


class Waiting:
    """`Waiting(reads, clock)`: claim-next calls that wait, on one read model."""

    def __init__(self, reads: ReadModel, clock: Clock) -> None:
        self._reads, self._clock = reads, clock
        self._lines = Lines()
        self._wakeups = Wakeups(reads, self._lines)
        self._ending = False  # the server is shutting down: waits end now

    async def claim_next(self, command: ClaimNext, attempt: Attempt,
                         run: Run = on_a_thread, unclaim: Unclaim | None = None) -> BaseModel:
        """Wait in the plan's line until `attempt` answers or the time is up (the module's
        doc); blocking work goes to `run`. Cancelled, it answers nothing, and a claim its
        try made meanwhile goes to `unclaim`."""
        plan = PlanSlug(command.plan)
        deadline = self._clock.now() + timedelta(seconds=command.wait_seconds)
        ticket = Ticket(asyncio.get_running_loop())
        served = False
        try:
            if not self._wakeups.watch():
                await run(self._wakeups.start)  # before the first try: no wake-up is missed
            self._lines.join(plan, ticket)
            while True:
                if self._lines.turn(plan, ticket, self._clock.now()):
                    answer, lapse = await _to_the_end(
                        run, lambda: self._try(plan, attempt), unclaim, lambda a: a[0])
                    if answer is not None:
                        served = True
                        return answer
                    self._lines.tried(plan, ticket, lapse)
                now = self._clock.now()
                if now >= deadline or self._ending:
                    final = await _to_the_end(run, lambda: attempt(True), unclaim,
                                              lambda a: a)
                    assert final is not None, "a final attempt answers"
                    return final
                await ticket.sleep(self._lines.seconds_to_sleep(plan, ticket, deadline, now))
        finally:
            self._lines.leave(plan, ticket, served)
            self._wakeups.unwatch()

    def claim_next_blocking(self, command: ClaimNext, attempt: Attempt) -> BaseModel:
        """`claim_next` for a caller outside any event loop (the CLI, a script), on a loop
        of its own; its tries run in the calling thread."""
        return asyncio.run(self.claim_next(command, attempt, inline))

    def _try(self, plan: PlanSlug, attempt: Attempt) -> tuple[BaseModel | None, datetime | None]:
        """A try's answer (None: nothing yet) and, if none, the next lapse after it began."""
        began = self._clock.now()
        answer = attempt(False)
        return answer, None if answer is not None else next_lapse(self._reads, plan, began)

    def waiting(self, plan: str, count: int, timeout: float = 10.0) -> bool:
        """Block until exactly `count` callers wait on the plan (tests and benches watch the
        line this way, not by sleeping); False after `timeout` seconds."""
        return self._lines.waiting(PlanSlug(plan), count, timeout)

    def appended(self) -> None:
        """A command appended in this process: waiters hear of it now, not at a poll."""
        self._wakeups.poke()

    def clock_moved(self) -> None:
        """The clock jumped (a test's injected clock): waiters judge their sleeps again."""
        self._lines.wake_all()

    def end_waits(self) -> None:
        """Every wait, and every wait that begins from now on, ends at its next turn with
        the answer its deadline would have had (`all_held`, or a claim if a step is free):
        a server shutting down answers its waiters instead of holding its exit for them."""
        self._ending = True
        self._lines.wake_all()

    def close(self) -> None:
        self._wakeups.close()
