"""A claim-next that waits (`wait_seconds`): real threads waiting in the service, an
injected clock for lapses and deadlines (moved by the test, never slept through), and the
HTTP API on a real socket with more waiters than the server has worker threads.

Every test watches the line (`Waiting.waiting`) rather than sleeping: a waiter is known to
wait once the line holds it."""

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from planledger.api.errors import problem
from planledger.api.idempotency import Idempotency
from planledger.api.identity import Identity
from planledger.api.runtime import Runtime
from planledger.api.schemas import ClaimNextOut
from planledger.api.service import Service
from planledger.api.settings import Settings
from planledger.ledger import commands as c
from planledger.ledger.answers import Answer
from planledger.ledger.application import NewStep
from planledger.ledger.domain.errors import InvalidInput
from planledger.ledger.domain.ids import SessionId, StepId
from planledger.ledger.domain.paths import PathSpec
from tests.support.fakes import FakeClock
from tests.support.live_server import author, live_server, session

PLAN = "work"
JOIN = 30.0  # a bound on a thread's answer, never a synchronisation


@pytest.fixture
def service(runtime: Runtime) -> Iterator[Service]:
    served = Service(runtime, Settings(db=runtime.db), Identity(b"s" * 32))
    yield served
    served.waiting.close()


@dataclass
class Waiter:
    """A thread that asks the service for the plan's next step, waiting up to `seconds`."""

    service: Service
    session_id: str
    seconds: int = 300
    key: str | None = None
    answer: ClaimNextOut | None = None
    error: Exception | None = None
    thread: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "Waiter":
        self.thread.start()
        return self

    def _run(self) -> None:
        command = c.ClaimNext(PLAN, self.session_id, 600, self.seconds)
        try:
            self.answer = self.service.answer(command, ClaimNextOut, self.key)
        except Exception as error:
            self.error = error

    def result(self) -> ClaimNextOut:
        self.thread.join(JOIN)
        assert not self.thread.is_alive(), "the waiter never answered"
        assert self.error is None, self.error
        assert self.answer is not None
        return self.answer

    @property
    def claimed(self) -> str | None:
        found = self.result().claimed
        return found.step_id if found is not None else None


def plan_of(runtime: Runtime, *steps: NewStep) -> list[StepId]:
    planner = runtime.ledger.start_session("planner").id
    return runtime.ledger.create_plan(PLAN, "Work", steps=steps, actor=planner)[1]


def sessions(runtime: Runtime, count: int, prefix: str = "agent") -> list[SessionId]:
    return [runtime.ledger.start_session(f"{prefix}-{i}").id for i in range(count)]


def in_line(service: Service, waiters: list[Waiter]) -> list[Waiter]:
    """Start the waiters one after another, each in line before the next starts."""
    for count, waiter in enumerate(waiters, start=1):
        waiter.start()
        assert service.waiting.waiting(PLAN, count), f"waiter {count} never queued"
    return waiters


def test_a_waiter_claims_the_step_its_dependency_frees_when_it_is_done(
    runtime: Runtime, service: Service,
) -> None:
    first, second = plan_of(runtime, NewStep("first", key="a"),
                            NewStep("second", depends_on=("a",)))
    holder, agent = sessions(runtime, 2)
    runtime.ledger.claim(first, holder)
    waiter = in_line(service, [Waiter(service, agent)])[0]

    service.execute(c.Complete(first, holder))

    assert waiter.claimed == second


def test_waiters_are_served_first_come_first_served_as_steps_are_freed_one_by_one(
    runtime: Runtime, service: Service,
) -> None:
    steps = plan_of(runtime, *(NewStep(f"step {i}") for i in range(6)))
    holder, *agents = sessions(runtime, 7)
    for step_id in steps:
        runtime.ledger.claim(step_id, holder, 600)
    waiters = in_line(service, [Waiter(service, a) for a in agents])

    for count, (step_id, waiter) in enumerate(zip(steps, waiters, strict=True)):
        service.execute(c.Release(step_id, holder))
        assert waiter.claimed == step_id  # the longest waiting, none other
        assert service.waiting.waiting(PLAN, len(waiters) - count - 1)


def test_a_release_of_many_steps_at_once_serves_the_first_in_line_each_once(
    runtime: Runtime, service: Service, clock: FakeClock,
) -> None:
    steps = plan_of(runtime, *(NewStep(f"step {i}") for i in range(8)))
    holder, *agents = sessions(runtime, 13)
    for step_id in steps:
        runtime.ledger.claim(step_id, holder, 600)
    waiters = in_line(service, [Waiter(service, a, seconds=60) for a in agents])

    service.execute(c.EndSession(holder))  # releases all eight

    served = [str(w.claimed) for w in waiters[:8]]
    assert sorted(served) == sorted(steps)  # each once, to the eight who came first
    assert service.waiting.waiting(PLAN, 4)
    clock.advance(61)
    service.waiting.clock_moved()
    for late in waiters[8:]:
        assert late.result().claimed is None and late.result().reason == "all_held"


def test_a_lapse_wakes_the_first_in_line_as_a_release_would_when_the_lease_ends(
    runtime: Runtime, service: Service, clock: FakeClock,
) -> None:
    (step_id,) = plan_of(runtime, NewStep("only"))
    holder, first, second = sessions(runtime, 3)
    runtime.ledger.claim(step_id, holder, 60)
    waiters = in_line(service, [Waiter(service, first), Waiter(service, second)])

    clock.advance(30)
    service.waiting.clock_moved()
    assert service.waiting.waiting(PLAN, 2)  # not lapsed yet: both still wait
    clock.advance(31)
    service.waiting.clock_moved()

    answer = waiters[0].result().claimed
    assert answer is not None and answer.step_id == step_id
    assert answer.took_over_from == holder
    assert service.waiting.waiting(PLAN, 1)
    clock.advance(300)
    service.waiting.clock_moved()
    assert waiters[1].claimed is None


def test_time_up_answers_why_nothing_is_ready_as_a_call_that_never_waited(
    runtime: Runtime, service: Service, clock: FakeClock,
) -> None:
    first, _ = plan_of(runtime, NewStep("first", key="a"), NewStep("second", depends_on=("a",)))
    holder, agent = sessions(runtime, 2)
    runtime.ledger.claim(first, holder, 600)
    waiter = in_line(service, [Waiter(service, agent, seconds=30)])[0]

    clock.advance(31)
    service.waiting.clock_moved()

    answer = waiter.result()
    assert answer.claimed is None
    at_once = service.answer(c.ClaimNext(PLAN, agent), ClaimNextOut)
    assert (answer.reason, answer.message) == (at_once.reason, at_once.message)


def test_a_finished_plan_answers_all_done_at_once(runtime: Runtime, service: Service) -> None:
    (step_id,) = plan_of(runtime, NewStep("only"))
    holder, agent = sessions(runtime, 2)
    runtime.ledger.claim(step_id, holder)
    runtime.ledger.complete(step_id, holder)

    answer = Waiter(service, agent).start().result()

    assert (answer.claimed, answer.reason) == (None, "all_done")


@pytest.mark.parametrize("review", [False, True])
def test_every_waiter_answers_all_done_when_the_plan_finishes_while_they_wait(
    runtime: Runtime, service: Service, review: bool,
) -> None:
    (step_id,) = plan_of(runtime, NewStep("only", review_required=review))
    holder, reviewer, *agents = sessions(runtime, 5)
    runtime.ledger.claim(step_id, holder)
    if review:  # in review until approved: nothing to claim, nothing finished yet
        service.execute(c.Complete(step_id, holder))
        service.execute(c.Claim(step_id, reviewer, review=True))
    waiters = in_line(service, [Waiter(service, a) for a in agents])

    if review:
        service.execute(c.Review(step_id, reviewer, "approve"))
    else:
        service.execute(c.Complete(step_id, holder))

    # (The waiters' deadline is 300 s of a clock nobody moves: only a wake-up answers.)
    assert [(w.result().claimed, w.result().reason) for w in waiters] == [
        (None, "all_done")] * len(agents)


def test_a_waiter_whose_step_is_added_later_claims_it(runtime: Runtime, service: Service,
                                                      ) -> None:
    plan_of(runtime)
    planner, agent = sessions(runtime, 2)
    waiter = in_line(service, [Waiter(service, agent)])[0]

    added = service.execute(c.AddStep(PLAN, "late", planner))

    assert waiter.claimed == getattr(added, "step_id", None)


def reserving(runtime: Runtime, planner: str, slug: str, pattern: str) -> StepId:
    """A plan `slug` of one step that reserves `pattern` while it is claimed."""
    made = runtime.ledger.execute(c.CreatePlan(slug, slug, planner, (), (
        NewStep("touches " + pattern, paths=(PathSpec(pattern),)),)))
    return made.step_ids[0]


@pytest.mark.parametrize("ends", ["complete", "lapse"])
def test_a_step_passed_by_for_a_reservation_in_another_plan_is_claimed_when_it_ends(
    runtime: Runtime, service: Service, clock: FakeClock, ends: str,
) -> None:
    planner, holder, agent = sessions(runtime, 3)
    elsewhere = reserving(runtime, planner, "other", "src/**")
    waited_for = reserving(runtime, planner, PLAN, "src/a.py")
    runtime.ledger.claim(elsewhere, holder, 60)
    waiter = in_line(service, [Waiter(service, agent)])[0]

    if ends == "complete":
        service.execute(c.Complete(elsewhere, holder))
    else:
        clock.advance(61)
        service.waiting.clock_moved()

    assert waiter.claimed == waited_for


def answers_recorded(runtime: Runtime, agent: str, key: str) -> list[Answer]:
    """The answers kept for the agent's key (one at most)."""
    found = runtime.store.answer(Idempotency(runtime).stream(agent, key))
    return [] if found is None else [found]


def test_a_keyed_waiting_claim_next_records_only_its_final_answer_and_replays_it(
    runtime: Runtime, service: Service,
) -> None:
    steps = plan_of(runtime, NewStep("first"), NewStep("second"))
    holder, agent = sessions(runtime, 2)
    for step_id in steps:
        runtime.ledger.claim(step_id, holder, 600)
    waiter = in_line(service, [Waiter(service, agent, key="k-1")])[0]
    service.execute(c.ClaimNext(PLAN, holder, 600))  # a try that finds nothing for it
    assert answers_recorded(runtime, agent, "k-1") == []

    service.execute(c.Release(steps[1], holder))

    assert waiter.claimed == steps[1]
    assert len(answers_recorded(runtime, agent, "k-1")) == 1
    replay = service.answer(c.ClaimNext(PLAN, agent, 600, 300), ClaimNextOut, "k-1")
    assert replay == waiter.result()  # at once, not a second claim


def test_a_keyed_time_up_answer_is_recorded_and_replayed(
    runtime: Runtime, service: Service, clock: FakeClock,
) -> None:
    (step_id,) = plan_of(runtime, NewStep("only"))
    holder, agent = sessions(runtime, 2)
    runtime.ledger.claim(step_id, holder, 600)
    waiter = in_line(service, [Waiter(service, agent, seconds=10, key="k-2")])[0]
    clock.advance(11)
    service.waiting.clock_moved()
    assert waiter.result().reason == "all_held"

    runtime.ledger.release(step_id, holder)
    replay = service.answer(c.ClaimNext(PLAN, agent, 600, 10), ClaimNextOut, "k-2")

    assert replay == waiter.result() and len(answers_recorded(runtime, agent, "k-2")) == 1


def test_a_waiter_whose_session_ends_elsewhere_is_answered_session_ended_in_its_turn(
    runtime: Runtime, service: Service,
) -> None:
    (step_id,) = plan_of(runtime, NewStep("only"))
    holder, agent = sessions(runtime, 2)
    runtime.ledger.claim(step_id, holder, 600)
    waiter = in_line(service, [Waiter(service, agent)])[0]
    runtime.ledger.end_session(agent)

    service.execute(c.Release(step_id, holder))

    waiter.thread.join(JOIN)
    assert waiter.error is not None and problem(waiter.error)[1].reason == "session_ended"


@pytest.mark.parametrize("seconds", [-1, c.MAX_WAIT_SECONDS + 1])
def test_wait_seconds_outside_its_bounds_is_refused_naming_it(
    runtime: Runtime, service: Service, seconds: int,
) -> None:
    plan_of(runtime, NewStep("only"))
    (agent,) = sessions(runtime, 1)
    with pytest.raises(InvalidInput, match="wait_seconds"):
        service.execute(c.ClaimNext(PLAN, agent, None, seconds))


# --- over HTTP: waiting holds no worker thread ----------------------------------------


def test_more_http_waiters_than_worker_threads_all_wait_while_others_are_served(
    runtime: Runtime,
) -> None:
    """anyio's pool has 40 threads: 48 waiting requests that held one each would leave
    none for the release that frees their steps."""
    count = 48
    with live_server(runtime) as server, server.client() as http:
        planner = author(http)
        steps = _http_plan(http, planner, count)
        holder_id, holder = session(http, "holder")
        for step_id in steps:
            assert http.post(f"/api/steps/{step_id}/claim", headers=holder).status_code == 200
        service: Service = server.app.state.service
        agents = [session(http, f"agent-{i}")[1] for i in range(count)]

        async def wait_all() -> list[dict[str, Any]]:
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
                asks = [asyncio.ensure_future(client.post(
                    f"/api/plans/{PLAN}/claim-next", headers=agent,
                    json={"wait_seconds": 60})) for agent in agents]
                queued = await asyncio.to_thread(service.waiting.waiting, PLAN, count)
                assert queued, "the waiters never all queued"
                ended = await asyncio.to_thread(
                    http.post, f"/api/sessions/{holder_id}/end", headers=holder)
                assert ended.status_code == 200, ended.text
                return [(await ask).json() for ask in asks]

        answers = asyncio.run(wait_all())
    claimed = [a["claimed"]["step_id"] for a in answers]
    assert sorted(claimed) == sorted(steps)


def test_http_wait_seconds_above_the_bound_is_422_naming_the_field(runtime: Runtime) -> None:
    with live_server(runtime) as server, server.client() as http:
        _http_plan(http, author(http), 1)
        _, agent = session(http, "agent")
        answer = http.post(f"/api/plans/{PLAN}/claim-next", headers=agent,
                           json={"wait_seconds": c.MAX_WAIT_SECONDS + 1})
    assert answer.status_code == 422
    assert "wait_seconds" in answer.json()["message"]


def _http_plan(http: httpx.Client, headers: dict[str, str], count: int) -> list[str]:
    made = http.post("/api/plans", headers=headers, json={
        "slug": PLAN, "title": "Work", "steps": [{"title": f"step {i}"} for i in range(count)]})
    assert made.status_code == 201, made.text
    return [s["step_id"] for s in made.json()["steps"]]

