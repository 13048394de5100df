"""The invariants a world checks after every action, and every so many actions in full.

After each action (cheap, incremental):
- the log's new events keep the claim rule (the reference model folds them: at most one
  live holder per step, fences grow by one per grant, closes by the live holder only);
- they keep the review gate: a step that requires review is done only by a reviewer's
  approval, and no verdict or claim to review is by the work's author or a session of
  the author's key ("four eyes"); two reviewers never hold one review at once ("one
  reviewer"); no step is granted while a step it depends on is neither done nor dropped,
  in review included ("dependencies");
- a command's answer is the reference model's (taken on the log as it stood just before),
  unless it replays an earlier answer or the store was unavailable;
- an acknowledged write is in the log at once (its events are noted, and looked for again
  in every full check);
- an idempotent retry gets its first answer, and the answer the log recorded for its key;
- one process's ready lists are the reference model's (compared again once the log or
  the clock moved since that process's lists last agreed with the reference model's).
Every `every` actions and at the end (full): every process's ready lists; each read model
rebuilt from the log (decoding every event afresh) equals the one kept incrementally; each
process's write-side state of every step is the reference model's (its author in review
too); every acknowledged event is still in the log; the auditor's fold of the whole log
(projections.claim_history) names the grants and completions the reference model folded,
and the log requires review of exactly the steps the world asked it of.
"""

from collections.abc import Collection, Iterator, Sequence, Sized
from datetime import datetime
from typing import Any, Protocol

from planledger.bench.simulation.actions import Action
from planledger.bench.simulation.calls import Reply, Request
from planledger.bench.simulation.decoding import decoding_afresh
from planledger.bench.simulation.reference import Reference
from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.ledger.ports import Clock
from planledger.ledger.store import EventStore
from planledger.projections.claim_history import claim_history
from planledger.projections.log import decode, page_after
from planledger.projections.queries import ready_ids
from planledger.projections.readmodel import ReadModel


class Replica(Protocol):
    """One process of the world, as the checks read it."""

    @property
    def store(self) -> EventStore: ...
    @property
    def reads(self) -> ReadModel: ...


class Watched(Protocol):
    """What the checks read of the world they watch (world.World, which makes them)."""

    @property
    def reference(self) -> Reference: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def plans(self) -> Sequence[str]: ...
    @property
    def steps(self) -> Sequence[tuple[str, str]]: ...  # (plan, step id)
    @property
    def history(self) -> Sized: ...
    @property
    def processes(self) -> Sequence[Replica]: ...

    @property
    def reviewed(self) -> Collection[str]: ...  # the steps the world made require review

    def sync(self) -> list[tuple[int, object]]: ...

    def recorded_answer(self, request: Request) -> Reply | None: ...


# The requests whose answer is a grant (a claim, or a claim to review).
GRANTS = frozenset({"claim", "heartbeat", "next", "review_claim", "review_next"})


class Violation(Exception):
    """An invariant the world broke; the message says which, and how."""


class Checks:
    def __init__(self, world: Watched, every: int) -> None:
        self.world = world
        self.every = every
        self.sent: set[str] = set()  # idempotency keys used so far
        self.first: dict[str, Reply] = {}  # each key's first answer
        self.acknowledged: set[tuple[str, int]] = set()  # (stream, version) of acked writes
        self.since_full = 0
        # Per read model (by id; the model kept, so no other takes its id): the positions of
        # it and of the reference model, and the moment, where their ready lists last
        # agreed. Both are folds of the log, judged at a moment: neither position nor the
        # clock moved, their lists are the same as then (a third of all actions move
        # neither: refusals, replays, writes refused by a fault).
        self._agreed: dict[int, tuple[ReadModel, tuple[int, int, datetime]]] = {}

    def expect(self, request: Request) -> str | None:
        """What the reference model says the request will answer; None for a replay."""
        if request.key is not None:
            if request.key in self.sent:
                return None  # a replay: it must answer as the first time instead
            self.sent.add(request.key)
        ref, now, actor = self.world.reference, self.world.clock.now(), request.actor or ""
        step = request.step or ""
        if request.op in ("claim", "heartbeat"):
            judge = ref.claim if request.op == "claim" else ref.heartbeat
            return judge(step, actor, now)
        if request.op in ("complete", "release", "drop"):
            return ref.close(request.op, step, actor, request.fence, now)
        if request.op == "next":
            return ref.claim_next(request.plan or "", actor, now)
        if request.op == "review_next":
            return ref.review_next(request.plan or "", actor, now)
        if request.op == "review_claim":
            return ref.review_claim(step, actor, now)
        if request.op in ("approve", "reject"):
            return ref.review(step, actor, now)
        if request.op == "end":
            return ref.end_session(actor)
        if request.op == "reopen":
            return ref.reopen(step)
        return "ok"

    def after(self, action: Action, request: Request | None, answer: Reply | None,
              expected: str | None) -> None:
        world = self.world
        new = world.sync()
        if world.reference.violations:
            raise Violation(f"the log breaks {world.reference.violations[0]}")
        if request is not None and answer is not None:
            self._answered(request, answer, expected, new)
        self._ready(world.processes[len(world.history) % len(world.processes)].reads)
        self.since_full += 1
        if self.since_full >= self.every:
            self.full()

    def _answered(self, request: Request, answer: Reply, expected: str | None,
                  new: list[tuple[int, object]]) -> None:
        got = _outcome(request.op, answer)
        if expected is not None and got != expected:
            raise Violation(f"{request.op} on {request.step or request.plan} by {request.actor} "
                            f"answered {got}, the reference model says {expected} "
                            f"({answer[1].get('message', '')})")
        if answer[0] == 200 and expected is not None:
            self._in_log(request, answer)
            self.acknowledged.update((getattr(e, "originator_id", ""),
                                      getattr(e, "originator_version", 0)) for _, e in new)
        if request.key is not None:
            first = self.first.setdefault(request.key, answer)
            if answer != first:
                raise Violation(f"an idempotent retry of {request.op} (key {request.key}) "
                                f"answered {answer}, its first answer was {first}")
            recorded = self.world.recorded_answer(request)
            if recorded is not None and recorded != answer:
                raise Violation(f"{request.op} (key {request.key}) answered {answer}; the log "
                                f"recorded {recorded} for its key")

    def _in_log(self, request: Request, answer: Reply) -> None:
        """An acknowledged write's effect is in the log the moment it is answered."""
        ref, body = self.world.reference, answer[1]
        claimed: Any = body.get("claimed", body) if request.op.endswith("next") else body
        if request.op in GRANTS and claimed:
            step = ref.steps[claimed["step_id"]]
            expires = datetime.fromisoformat(claimed["expires_at"])
            if (step.holder, step.fence, step.expires) != (request.actor, claimed["fence"],
                                                          expires):
                raise Violation(f"an acknowledged grant of {claimed['step_id']} (fence "
                                f"{claimed['fence']}) is not what the log says: holder "
                                f"{step.holder}, fence {step.fence}, until {step.expires}")
        status = {"complete": "in_review" if ref.steps[request.step or ""].review else "done",
                  "drop": "dropped", "release": "open", "reopen": "open", "approve": "done",
                  "reject": "open"} if request.step else {}
        if request.op in status and ref.steps[request.step or ""].status != status[request.op]:
            raise Violation(f"an acknowledged {request.op} of {request.step} is not in the log")
        if request.op == "end" and request.actor not in ref.ended:
            raise Violation(f"an acknowledged end of session {request.actor} is not in the log")
        if request.op == "start" and body["session_id"] not in ref.sessions:
            raise Violation(f"an acknowledged session start {body['session_id']} is not in "
                            "the log")

    def _ready(self, reads: ReadModel) -> None:
        ref = self.world.reference
        # What ReadModel.ready answers, every plan under one pull of the log (a pull per
        # plan was a tenth of a run's time)
        with reads.reading() as (view, now):
            moment = (view.position, ref.position, now)
            if self._agreed.get(id(reads)) == (reads, moment):
                return  # the same folds at the same moment: they agree as they did
            got = [(plan, ready_ids(view, PlanSlug(plan), now)) for plan in self.world.plans]
        for plan, ready in got:
            want = ref.ready(plan, now)
            if ready != want:
                raise Violation(f"ready({plan}) is {ready}; the reference model says {want}")
        self._agreed[id(reads)] = (reads, moment)

    def full(self) -> None:
        self.since_full = 0
        world = self.world
        # Every process reads the one log: one read model rebuilt from it stands for all
        rebuilt = ReadModel(world.processes[0].store, world.clock)
        with decoding_afresh(world.processes[0].store):  # none of the shared decodings
            rebuilt.catch_up()
        facts = rebuilt.facts()
        for number, process in enumerate(world.processes):
            self._ready(process.reads)
            process.reads.catch_up()
            if process.reads.facts() != facts:
                raise Violation(f"process {number}: a read model rebuilt from the log differs "
                                "from the one kept incrementally")
            for _, step_id in world.steps:
                state, ref = process.store.step(StepId(step_id)), world.reference.steps[step_id]
                if (state.status, state.holder, state.fence, state.expires_at, state.author
                        ) != (ref.status, ref.holder, ref.fence, ref.expires, ref.author):
                    raise Violation(f"process {number}: step {step_id} is {state} on the "
                                    f"write side; the reference model has {ref}")
        self._all_acknowledged_kept()
        self._audit_agrees()

    def _audit_agrees(self) -> None:
        """The auditor's fold of the whole log (projections.claim_history: every grant,
        to reviewers too, and every completion or submission for review) names what the
        reference model folded, and the steps that require review are the world's."""
        world, ref = self.world, self.world.reference
        audit = claim_history(pages_of(world.processes[0].store))
        granted = {at: claim.session_id for at, claim in audit.claims.items()}
        if granted != ref.grants:
            wrong = sorted(set(granted.items()) ^ set(ref.grants.items()))[:3]
            raise Violation(f"the audit's claims differ from the log's: {wrong}")
        finished = [(done.step_id, done.session_id or "", done.fence)
                    for done in audit.completions]
        if finished != ref.finished:
            raise Violation(f"the audit's completions differ from the log's: {finished[:3]} "
                            f"against {ref.finished[:3]}")
        reviewed = {s for s, r in ref.steps.items() if r.review}
        if reviewed != set(world.reviewed):
            raise Violation(f"the log requires review of steps {sorted(reviewed)}; the world "
                            f"asked it of {sorted(world.reviewed)}")

    def _all_acknowledged_kept(self) -> None:
        store, after = self.world.processes[0].store, 0
        logged: set[tuple[str, int]] = set()
        while notes := page_after(store, after, 1000):
            logged.update((str(n.originator_id), n.originator_version) for n in notes)
            after = notes[-1].id
        missing = self.acknowledged - logged
        if missing:
            raise Violation(f"acknowledged writes missing from the log: {sorted(missing)[:5]}")


def _outcome(op: str, answer: Reply) -> str:
    status, body = answer
    if status != 200:
        return str(body.get("reason"))
    if op in ("claim", "heartbeat", "review_claim"):
        return "renewed" if body["renewed"] else "granted"
    if op in ("next", "review_next"):
        return f"granted {body['claimed']['step_id']}" if body["claimed"] else "nothing"
    return "ok"


def pages_of(store: EventStore) -> Iterator[tuple[int, object]]:
    """Every event of the log, decoded, with its position."""
    after = 0
    while notes := page_after(store, after, 1000):
        yield from decode(store, notes)
        after = notes[-1].id
