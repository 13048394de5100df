"""The two-agent demo: the seed's plan, and two agents racing for the same step.

`race` seeds plan auth-refresh (steps 1-4 done, 5 and 6 claimable), then runs two agent
sessions on real threads over the real Ledger API. Each starts a session and lists the
ready steps; a barrier releases both at once and both go for the oldest ready step
(step 5). One claim lands; the other bounces naming the holder, lists again and claims
what is left (step 6). A second barrier stands for the work itself, which takes far
longer than a claim: neither completes before both hold a step. Both complete and end
their sessions. The log of it all is the recording.
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from planledger.api.runtime import Runtime
from planledger.ledger.application import Ledger
from planledger.ledger.domain.errors import AlreadyClaimed
from planledger.ledger.domain.ids import StepId
from planledger.replays.fixture import PLAN, seed_auth_refresh

AGENTS = ("agent A", "agent B")
BARRIER_TIMEOUT = 30.0


@dataclass(frozen=True)
class AgentRun:
    name: str
    session_id: str
    listed: tuple[StepId, ...]  # what it was shown before the race
    bounced_by: str | None  # the holder its first claim bounced off, if it lost
    took: StepId  # the step it claimed and completed


@dataclass(frozen=True)
class RaceResult:
    steps: tuple[StepId, ...]
    agents: tuple[AgentRun, ...]

    @property
    def winner(self) -> AgentRun:
        return next(a for a in self.agents if a.bounced_by is None)

    @property
    def loser(self) -> AgentRun:
        return next(a for a in self.agents if a.bounced_by is not None)


def race(runtime: Runtime, think: float = 0.0) -> RaceResult:
    """Seed the race variant of the plan and run the two agents; returns who did what.
    `think`: seconds each agent spends between its calls, as a model would (the shipped
    example's transcripts need room on the clock for the agents' prose); the claims still
    race, released together."""
    steps = seed_auth_refresh(runtime.ledger, race=True)
    barrier = threading.Barrier(len(AGENTS), timeout=BARRIER_TIMEOUT)
    with ThreadPoolExecutor(len(AGENTS)) as pool:
        futures = [pool.submit(_agent, runtime.ledger, name, barrier, think)
                   for name in AGENTS]
        runs = tuple(f.result() for f in futures)
    return RaceResult(tuple(steps), runs)


def _agent(ledger: Ledger, name: str, barrier: threading.Barrier, think: float
           ) -> AgentRun:
    """One agent: list ready, wait for the other, claim the oldest; on a bounce, pivot;
    work (wait for the other to hold a step too); complete; end the session."""
    session = ledger.start_session(name)
    time.sleep(think)
    listed = ledger.list_ready(PLAN, session.id)
    time.sleep(think)
    barrier.wait()
    bounced_by = None
    try:
        grant = ledger.claim(listed[0], session.id)
    except AlreadyClaimed as bounce:
        bounced_by = bounce.holder
        time.sleep(think)
        pivot = ledger.list_ready(PLAN, session.id)[0]
        time.sleep(think)
        grant = ledger.claim(pivot, session.id)
    time.sleep(think)
    barrier.wait()
    time.sleep(think)
    ledger.complete(grant.step_id, session.id, grant.fence)
    time.sleep(think)
    ledger.end_session(session.id)  # done: a live session left behind shows as idle
    return AgentRun(name, session.id, tuple(listed), bounced_by, grant.step_id)
