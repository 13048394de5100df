"""One simulated world: processes of the real ledger over one store, agents, a virtual
clock and the store's faults; it runs actions and checks the invariants after each.

A process is what a server replica is: its own `EventStore` (caches, hash-chain heads,
snapshots), `ReadModel` and `Service` (the operations HTTP and MCP call, idempotency
included) over the world's one log. A crash drops a process and opens a new one on the
same log. Agents hold what they were told (their session, the steps they were granted and
each grant's fence) and nothing else.
"""

import random
import tempfile
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from eventsourcing.persistence import PersistenceError
from pydantic import BaseModel

from planledger.api.errors import ApiError, Replayed, problem
from planledger.api.idempotency import Idempotency
from planledger.api.identity import Identity
from planledger.api.metrics import Metrics
from planledger.api.runtime import Runtime
from planledger.api.service import Service
from planledger.api.settings import Settings
from planledger.bench.simulation.actions import (
    LEDGER_CALLS,
    REVIEW_SHARE,
    REVIEWS,
    Action,
    choose,
    choose_review,
)
from planledger.bench.simulation.calls import Reply, Request
from planledger.bench.simulation.checks import Checks, Violation
from planledger.bench.simulation.clock import EPOCH, CountingIds, VirtualClock
from planledger.bench.simulation.decoding import Decodings
from planledger.bench.simulation.faults import FaultPlan, FaultyEventStore
from planledger.bench.simulation.reference import Reference
from planledger.infra.persistence import persistence_for
from planledger.ledger import commands as c
from planledger.ledger.application import Ledger, NewStep
from planledger.ledger.domain.errors import LedgerError
from planledger.ledger.domain.ids import local_operator
from planledger.ledger.storage import MEMORY, store_settings
from planledger.projections.log import decode, page_after
from planledger.projections.readmodel import ReadModel

SECRET = b"planledger-simulation-secret-0123456789"
OPERATOR = local_operator("simulator")
_NOT_RECORDED = ("token", "replayed", "note")
_PAGE = 1000  # only a session start's first answer has these
REVIEW_WORLDS = 0.5  # the share of worlds with no review gate at all


@dataclass
class Process:
    store: FaultyEventStore
    reads: ReadModel
    service: Service


@dataclass
class Agent:
    process: int
    session: str | None = None
    held: dict[str, int] = field(default_factory=dict)  # step -> the fence it was granted
    unanswered: Request | None = None  # the last keyed request that got no answer
    last_keyed: Request | None = None
    reviewing: dict[str, int] = field(default_factory=dict)  # step -> its review grant's fence


@dataclass(frozen=True)
class Shape:
    """What a world's seed fixes before any action: its processes, agents and plans."""

    processes: int
    agents: int
    plans: tuple[tuple[tuple[int, ...], ...], ...]  # per plan, per step: its dependencies
    fault_rate: float
    # The review gate: per plan, whether the plan requires review, and per step whether
    # the step does; how many access keys the agents share (0: none, agent i holds key
    # i % keys, so two agents of one key are one pair of eyes).
    review_plans: tuple[bool, ...] = ()
    review_steps: tuple[tuple[bool, ...], ...] = ()
    keys: int = 0

    @property
    def reviews(self) -> bool:
        return any(self.review_plans) or any(any(steps) for steps in self.review_steps)

    @staticmethod
    def of(seed: int) -> "Shape":
        rng = random.Random(seed)
        plans = []
        for _ in range(rng.choice((1, 1, 2))):
            count = rng.randint(3, 8)
            plans.append(tuple(tuple(sorted({rng.randrange(i) for _ in range(rng.randint(0, 2))}))
                               if i and rng.random() < 0.4 else () for i in range(count)))
        shape = Shape(processes=rng.choice((1, 1, 2, 2, 3)), agents=rng.randint(2, 6),
                      plans=tuple(plans), fault_rate=rng.choice((0.0, 0.05, 0.15, 0.3)))
        return shape.with_reviews(random.Random(seed * 7919 + 3))

    def with_reviews(self, rng: random.Random) -> "Shape":
        """Half the worlds require reviews: of a whole plan, or of some of its steps. Their
        own generator, so the other half are the worlds they were before the review gate."""
        if rng.random() < REVIEW_WORLDS:
            return self
        whole = tuple(rng.random() < 0.3 for _ in self.plans)
        steps = tuple(tuple(not w and rng.random() < 0.5 for _ in deps)
                      for w, deps in zip(whole, self.plans, strict=True))
        return replace(self, review_plans=whole, review_steps=steps,
                       keys=rng.choice((0, 2, 3)))


class World:
    def __init__(self, seed: int, store: str = MEMORY, check_every: int = 1000,
                 *, tracing: bool = False,
                 store_class: type[FaultyEventStore] = FaultyEventStore) -> None:
        self.seed = seed
        self.store_class = store_class
        self.trace: list[str] | None = [] if tracing else None  # each action and its answer
        self.shape = Shape.of(seed)
        self.clock = VirtualClock()
        self.ids = CountingIds()
        self.faults = FaultPlan(self.clock)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.decodings: Decodings = {}  # shared by its processes (simulation.decoding)
        self.db = store
        if store != MEMORY:
            self._tmp = tempfile.TemporaryDirectory(prefix="planledger-sim-")
            self.db = str(Path(self._tmp.name) / "ledger.sqlite")
        # One registry of counters for the world's processes: nothing here reads them, and
        # making a registry was a third of a restart
        self.metrics = Metrics()
        self.processes: list[Process] = []
        for _ in range(self.shape.processes):
            self.processes.append(self._open())
        self.agents = [Agent(process=i % self.shape.processes) for i in range(self.shape.agents)]
        self.plans: list[str] = []
        self.steps: list[tuple[str, str]] = []  # (plan, step id), every plan's steps
        self.reviewed: set[str] = set()  # the steps whose completion waits for a review
        self._issue_keys()
        self._create_plans()
        self.reference = Reference()
        self.checks = Checks(self, check_every)
        self.history: list[Action] = []
        self.commands = 0  # ledger commands sent (retries included)
        self._idempotency: Idempotency | None = None
        self._answer_streams: dict[tuple[str | None, str], str] = {}  # (actor, key) -> stream
        self.sync()

    # --- processes ---------------------------------------------------------------

    def _open(self) -> Process:
        shared = self.processes[0].store.shared_recorder() if (
            self.db == MEMORY and self.processes) else None
        store = self.store_class(store_settings(self.db), persistence_for(self.db), self.faults,
                                 shared, decodings=self.decodings)
        reads = ReadModel(store, self.clock, secret=SECRET)
        ledger = Ledger(store, self.clock, self.ids, reads)
        runtime = Runtime(self.db, store, ledger, reads, SECRET)
        return Process(store, reads, Service(runtime, Settings(db=self.db), Identity(SECRET),
                                             self.metrics))

    def crash(self, index: int) -> None:
        """The process dies between two requests: its caches and read model are gone; a
        new one opens on the same log (a write in flight is a `fail` or `lost_ack`)."""
        index %= len(self.processes)
        if self.db != MEMORY:
            self.processes[index].store.close()
        self.processes[index] = self._open()

    def close(self) -> None:
        for process in self.processes:
            process.store.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def _issue_keys(self) -> None:
        """The shape's access keys, a planner's each (the role the simulator's agents act
        with when no key is live)."""
        for number in range(self.shape.keys):
            self.processes[0].service.issue_key(f"key-{number}", "planner", OPERATOR)

    def key_of(self, agent: int) -> str | None:
        return f"key-{agent % self.shape.keys}" if self.shape.keys else None

    def _create_plans(self) -> None:
        ledger, shape = self.processes[0].service.ledger, self.shape
        for number, deps in enumerate(shape.plans):
            slug = f"plan-{number}"
            whole = bool(shape.review_plans) and shape.review_plans[number]
            own = shape.review_steps[number] if shape.review_steps else (False,) * len(deps)
            steps = [NewStep(f"step {i}", key=str(i), depends_on=tuple(str(d) for d in ds),
                             review_required=own[i]) for i, ds in enumerate(deps)]
            made = ledger.execute(c.CreatePlan(slug, f"plan {number}", OPERATOR,
                                               steps=tuple(steps), review_required=whole))
            ids = list(made.step_ids)
            self.plans.append(slug)
            self.steps += [(slug, s) for s in ids]
            self.reviewed.update(s for i, s in enumerate(ids) if whole or own[i])

    # --- running -----------------------------------------------------------------

    def generate(self, count: int) -> None:
        """Run `count` actions drawn from the world's seed."""
        rng = random.Random(self.seed * 7919 + 1)
        shape = self.shape
        # Reviews are drawn from a generator of their own, so a world without them draws
        # the actions it drew before the review gate
        reviews = random.Random(self.seed * 7919 + 2) if shape.reviews else None
        for _ in range(count):
            if reviews is not None and reviews.random() < REVIEW_SHARE:
                self.act(choose_review(reviews, shape.agents, len(self.steps),
                                       shape.fault_rate))
            else:
                self.act(choose(rng, shape.agents, len(self.steps), shape.processes,
                                shape.fault_rate))

    def replay(self, actions: Iterable[Action]) -> None:
        for action in actions:
            self.act(action)

    def act(self, action: Action) -> None:
        self.history.append(action)
        request = None
        answer: Reply | None = None
        expected: str | None = None
        if action.kind in ("tick", "pause"):
            self.clock.advance(action.seconds)
        elif action.kind == "outage":
            self.faults.refuse_until = self.clock.now() + timedelta(seconds=action.seconds)
        elif action.kind == "crash":
            self.crash(action.agent)
        else:
            request = self._request(action)
            if request is not None:
                expected = self.checks.expect(request)
                answer = self._send(action, request)
        if self.trace is not None:
            self.trace.append(f"{len(self.history)}. t+{self._elapsed()} {action}"
                              + (f" -> {_told(answer)}" if request is not None else ""))
        self.checks.after(action, request, answer, expected)

    def _elapsed(self) -> str:
        return f"{(self.clock.now() - EPOCH).total_seconds():g}s"

    # --- requests ----------------------------------------------------------------

    def _request(self, action: Action) -> Request | None:
        agent = self.agents[action.agent]
        if action.kind == "retry":
            return agent.unanswered or agent.last_keyed
        key = f"k{len(self.history)}" if action.keyed else None
        if action.kind == "reopen":
            return Request("reopen", OPERATOR, step=self.steps[action.step][1], key=key)
        if agent.session is None:  # an agent's first act is to start a session
            return Request("start", None, key=key, access=self.key_of(action.agent))
        if action.kind == "start":
            return None
        if action.kind in REVIEWS:
            return self._review_request(agent, action, key)
        plan, step = self._target(agent, action)
        if action.kind == "next":
            return Request("next", agent.session, plan=plan, lease=action.lease, key=key)
        if action.kind == "end":
            return Request("end", agent.session, key=key)
        fence = None
        if action.kind in ("complete", "release", "drop") and action.fence != "none":
            known = agent.held.get(step, self.reference.steps[step].fence)
            fence = known if action.fence == "known" else max(0, known - 1)
        return Request(action.kind, agent.session, step=step, plan=plan, lease=action.lease,
                       fence=fence, key=key)

    def _review_request(self, agent: Agent, action: Action, key: str | None) -> Request:
        """A reviewer's request: mostly about a step in review (one it reviews, for a
        verdict; its own work, for a self-review that four eyes must refuse)."""
        ref, session = self.reference, agent.session
        if action.kind == "review_next":
            plan = self.steps[action.step][0]
            return Request("review_next", session, plan=plan, lease=action.lease, key=key)
        waiting = [s for _, s in self.steps if ref.steps[s].status == "in_review"]
        if action.kind == "self_review":
            waiting = [s for s in waiting if ref.own_work(s, session or "")]
        elif action.kind in ("approve", "reject") and agent.reviewing:
            waiting = sorted(agent.reviewing)
        step = (waiting[action.step % len(waiting)] if waiting and action.fence != "stale"
                else self.steps[action.step][1])
        op = {"review": "review_claim", "self_review": "approve"}.get(action.kind, action.kind)
        return Request(op, session, step=step, lease=action.lease, key=key)

    def _target(self, agent: Agent, action: Action) -> tuple[str, str]:
        """The step an action is about: mostly one the agent holds, when it acts on its
        own claims."""
        if agent.held and action.kind in ("heartbeat", "complete", "release", "drop") and (
                action.fence != "stale"):
            held = sorted(agent.held)
            step = held[action.step % len(held)]
            return next(p for p, s in self.steps if s == step), step
        return self.steps[action.step]

    def _send(self, action: Action, request: Request) -> Reply | None:
        """The request through the agent's process; its answer as a caller reads it, or
        None when the store was unavailable (503)."""
        agent = self.agents[action.agent]
        process = self.processes[agent.process]
        self.faults.arm(action.fault, conflicts=1 + len(self.history) % 3)
        self.commands += 1
        try:
            out = _call(process.service, request)
        except PersistenceError:
            answer = None
        except (LedgerError, ApiError, Replayed) as error:
            status, body = problem(error)
            answer = (status, body.model_dump(mode="json", exclude_none=True))
        except Exception as error:  # a 500: never an answer the product may give
            raise Violation(f"{request.op} answered a 500: {type(error).__name__}: {error}\n"
                            + traceback.format_exc()) from error
        else:
            answer = (200, out.model_dump(mode="json", exclude=set(_NOT_RECORDED)))
        finally:
            self.faults.arm(None)
        if request.key is not None:
            agent.last_keyed = request
        agent.unanswered = request if answer is None and request.key is not None else None
        self._learn(agent, request, answer)
        return answer

    def _learn(self, agent: Agent, request: Request, answer: Reply | None) -> None:
        """What the agent takes from an answer (nothing from no answer)."""
        if answer is None:
            return
        status, body = answer
        if request.op == "start" and status == 200:
            agent.session, agent.held, agent.reviewing = body["session_id"], {}, {}
        elif status == 200 and request.op in ("review_claim", "review_next"):
            claimed = body.get("claimed", body) if request.op == "review_next" else body
            if claimed:
                agent.reviewing[claimed["step_id"]] = claimed["fence"]
        elif request.op in ("approve", "reject"):
            if status == 200 or body.get("reason") in ("not_in_review", "already_claimed"):
                agent.reviewing.pop(request.step or "", None)
        elif status == 200 and request.op in ("claim", "heartbeat", "next"):
            claimed = body.get("claimed", body) if request.op == "next" else body
            if claimed:
                agent.held[claimed["step_id"]] = claimed["fence"]
        elif request.op == "end" and (status == 200 or body.get("reason") == "session_ended"):
            agent.session, agent.held, agent.reviewing = None, {}, {}
        elif request.step is not None and request.op != "reopen" and (
                status == 200 or body.get("reason") in ("not_holder", "stale_fence", "closed")):
            agent.held.pop(request.step, None)

    # --- the log -----------------------------------------------------------------

    def sync(self) -> list[tuple[int, object]]:
        """Fold what was appended since into the reference model; the new events."""
        store = self.processes[0].store
        new: list[tuple[int, object]] = []
        if store.log_end() == self.reference.position:  # nothing appended since (a refusal, a tick)
            return new
        while True:
            notes = page_after(store, self.reference.position, _PAGE)
            events = decode(store, notes)
            self.reference.fold(events)
            new += events
            if len(notes) < _PAGE:  # the log's end: no need to ask again
                return new

    def recorded_answer(self, request: Request) -> Reply | None:
        """The answer the log holds for a keyed request, if any."""
        assert request.key is not None
        runtime = self.processes[0].service.runtime
        if self._idempotency is None or self._idempotency.runtime is not runtime:
            self._idempotency = Idempotency(runtime)  # its key derived once per process
        # A key's stream is a keyed hash of the actor and the key (the world's one secret)
        named = (request.actor, request.key)
        stream = self._answer_streams.get(named)
        if stream is None:
            stream = self._answer_streams[named] = self._idempotency.stream(*named)
        found = self._idempotency.lookup(stream)
        return None if found is None else (found.status, found.body)


def _told(answer: Reply | None) -> str:
    """An answer in a few words, for a history a person reads."""
    if answer is None:
        return "503 store unavailable"
    status, body = answer
    if status != 200:
        return f"{status} {body.get('reason')}"
    claimed = body.get("claimed", body)
    if claimed and "fence" in claimed:
        return f"200 step {claimed['step_id']} fence {claimed['fence']}"
    return "200 " + " ".join(f"{k}={v}" for k, v in sorted(body.items()) if k != "message")


def _call(service: Service, r: Request) -> BaseModel:
    if r.op == "start":
        command = c.StartSession(key=r.access, role="planner" if r.access else None)
        return service.start_session(command, key=r.key)
    return service.execute(_command(r), key=r.key)


def _command(r: Request) -> c.Command[Any]:
    """The command value a simulated request stands for."""
    actor, step = r.actor or "", r.step or ""
    built: dict[str, Callable[[], c.Command[Any]]] = {
        "claim": lambda: c.Claim(step, actor, r.lease),
        "heartbeat": lambda: c.Heartbeat(step, actor, r.lease),
        "next": lambda: c.ClaimNext(r.plan or "", actor, r.lease),
        "complete": lambda: c.Complete(step, actor, r.fence),
        "release": lambda: c.Release(step, actor, r.fence),
        "drop": lambda: c.Drop(step, actor, r.fence),
        "end": lambda: c.EndSession(actor),
        "reopen": lambda: c.Reopen(step, actor),
        "review_claim": lambda: c.Claim(step, actor, r.lease, review=True),
        "review_next": lambda: c.ClaimNext(r.plan or "", actor, r.lease, review=True),
        "approve": lambda: c.Review(step, actor, "approve"),
        "reject": lambda: c.Review(step, actor, "reject", note="rejected: try again"),
    }
    if r.op not in built:
        raise ValueError(f"unknown request {r.op}")
    command: c.Command[Any] = built[r.op]()
    return command


__all__ = ["LEDGER_CALLS", "Agent", "Process", "Reply", "Request", "World"]
