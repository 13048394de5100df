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
from dataclasses import dataclass, field
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
from planledger.bench.simulation.actions import LEDGER_CALLS, Action, choose
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


@dataclass(frozen=True)
class Shape:
    """What a world's seed fixes before any action: its processes, agents and plans."""

    processes: int
    agents: int
    plans: tuple[tuple[tuple[int, ...], ...], ...]  # per plan, per step: its dependencies
    fault_rate: float

    @staticmethod
    def of(seed: int) -> "Shape":
        rng = random.Random(seed)
        plans = []
        for _ in range(rng.choice((1, 1, 2))):
            count = rng.randint(3, 8)
            plans.append(tuple(tuple(sorted({rng.randrange(i) for _ in range(rng.randint(0, 2))}))
                               if i and rng.random() < 0.4 else () for i in range(count)))
        return Shape(processes=rng.choice((1, 1, 2, 2, 3)), agents=rng.randint(2, 6),
                     plans=tuple(plans), fault_rate=rng.choice((0.0, 0.05, 0.15, 0.3)))


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

    def _create_plans(self) -> None:
        ledger = self.processes[0].service.ledger
        for number, deps in enumerate(self.shape.plans):
            slug = f"plan-{number}"
            steps = [NewStep(f"step {i}", key=str(i), depends_on=tuple(str(d) for d in ds))
                     for i, ds in enumerate(deps)]
            _, ids = ledger.create_plan(slug, f"plan {number}", steps=steps, actor=OPERATOR)
            self.plans.append(slug)
            self.steps += [(slug, s) for s in ids]

    # --- running -----------------------------------------------------------------

    def generate(self, count: int) -> None:
        """Run `count` actions drawn from the world's seed."""
        rng = random.Random(self.seed * 7919 + 1)
        shape = self.shape
        for _ in range(count):
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
            return Request("start", None, key=key)
        if action.kind == "start":
            return None
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
            agent.session, agent.held = body["session_id"], {}
        elif status == 200 and request.op in ("claim", "heartbeat", "next"):
            claimed = body.get("claimed", body) if request.op == "next" else body
            if claimed:
                agent.held[claimed["step_id"]] = claimed["fence"]
        elif request.op == "end" and (status == 200 or body.get("reason") == "session_ended"):
            agent.session, agent.held = None, {}
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
        return service.start_session(c.StartSession(), key=r.key)
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
    }
    if r.op not in built:
        raise ValueError(f"unknown request {r.op}")
    command: c.Command[Any] = built[r.op]()
    return command


__all__ = ["LEDGER_CALLS", "Agent", "Process", "Reply", "Request", "World"]
