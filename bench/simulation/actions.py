"""What happens in a world, one action at a time, and how a seed chooses them.

An action names everything it needs by index (the agent, the step, how it states its
fence), so a history replays the same from its list alone, and a shorter list (a shrunk
history, see `shrink`) still means something: an action that no longer fits (an agent
without a session completing a step) is skipped.
"""

import random
from bisect import bisect
from dataclasses import dataclass
from typing import Literal

from planledger.bench.simulation.faults import FAULTS, Fault

Kind = Literal[
    "start", "claim", "heartbeat", "complete", "release", "drop", "next", "end", "reopen",
    "retry", "tick", "pause", "crash", "outage",
    "review", "review_next", "approve", "reject", "self_review",
]
FenceMode = Literal["known", "none", "stale"]
# A reviewer's actions (the review gate, in worlds that require reviews): take a step in
# review by id or by claim-next, give a verdict, or (the author) review its own work.
REVIEWS: frozenset[str] = frozenset({"review", "review_next", "approve", "reject",
                                     "self_review"})
# The kinds of action that are calls to the ledger (the rest are the world's doing).
LEDGER_CALLS: frozenset[str] = frozenset(
    {"start", "claim", "heartbeat", "complete", "release", "drop", "next", "end", "reopen",
     *REVIEWS})
REVIEW_SHARE = 0.25  # of the actions of a world that requires reviews
LEASES = (20, 60, 180)

# How often each action is chosen (the rest of the mix follows from these weights).
_WEIGHTS: dict[Kind, int] = {
    "claim": 16, "heartbeat": 10, "complete": 10, "release": 4, "drop": 2, "next": 14,
    "end": 2, "start": 2, "reopen": 3, "retry": 6, "tick": 10, "pause": 2, "crash": 1,
    "outage": 1,
}
_KINDS: list[Kind] = list(_WEIGHTS)
_CUMULATIVE = [sum(list(_WEIGHTS.values())[: i + 1]) for i in range(len(_WEIGHTS))]
_TOTAL = float(_CUMULATIVE[-1])
_REVIEW_WEIGHTS: dict[Kind, int] = {
    "review_next": 8, "review": 4, "approve": 7, "reject": 3, "self_review": 3,
}
_REVIEW_KINDS: list[Kind] = list(_REVIEW_WEIGHTS)


@dataclass(frozen=True)
class Action:
    kind: Kind
    agent: int = 0
    step: int = 0
    lease: int = 60
    fence: FenceMode = "known"
    keyed: bool = False
    fault: Fault | None = None
    seconds: float = 0.0

    def __str__(self) -> str:
        if self.kind in ("tick", "pause", "outage"):
            return f"{self.kind} {self.seconds:g}s"
        if self.kind == "crash":
            return f"crash process {self.agent}"
        words = [self.kind, f"agent {self.agent}"]
        if self.kind in ("claim", "heartbeat", "complete", "release", "drop", "reopen",
                         "review", "approve", "reject", "self_review"):
            words.append(f"step {self.step}")
        if self.kind in ("claim", "heartbeat", "next", "review", "review_next"):
            words.append(f"lease {self.lease}s")
        if self.kind in REVIEWS and self.fence == "stale":
            words.append("any step")
        if self.kind in ("complete", "release", "drop"):
            words.append(f"fence {self.fence}")
        if self.keyed:
            words.append("keyed")
        if self.fault:
            words.append(f"[{self.fault}]")
        return " ".join(words)


def choose(rng: random.Random, agents: int, steps: int, processes: int,
           fault_rate: float) -> Action:
    """One action, drawn from the seed's generator."""
    # rng.choices(_KINDS, cum_weights=_CUMULATIVE)[0], the same draw without its list
    kind = _KINDS[bisect(_CUMULATIVE, rng.random() * _TOTAL, 0, len(_KINDS) - 1)]
    if kind == "tick":
        return Action("tick", seconds=rng.choice((1, 2, 5, 10, 30)))
    if kind == "pause":  # an agent stalls: its leases run out meanwhile
        return Action("pause", seconds=rng.choice(LEASES) + rng.choice((0, 1, 15)))
    if kind == "crash":
        return Action("crash", agent=rng.randrange(processes))
    if kind == "outage":
        return Action("outage", seconds=rng.choice((5, 20, 60)))
    fault = rng.choice(FAULTS) if rng.random() < fault_rate else None
    roll = rng.random()
    fence: FenceMode = "known" if roll < 0.8 else "none" if roll < 0.93 else "stale"
    return Action(kind, agent=rng.randrange(agents), step=rng.randrange(steps),
                  lease=rng.choice(LEASES), fence=fence, keyed=rng.random() < 0.3,
                  fault=fault)


def choose_review(rng: random.Random, agents: int, steps: int, fault_rate: float) -> Action:
    """A reviewer's action, drawn from the world's review generator. Its `fence` "stale"
    aims it at any step (index `step`), not at one in review."""
    kind = rng.choices(_REVIEW_KINDS, weights=list(_REVIEW_WEIGHTS.values()))[0]
    fault = rng.choice(FAULTS) if rng.random() < fault_rate else None
    fence: FenceMode = "stale" if rng.random() < 0.1 else "known"
    return Action(kind, agent=rng.randrange(agents), step=rng.randrange(steps),
                  lease=rng.choice(LEASES), fence=fence, keyed=rng.random() < 0.3,
                  fault=fault)
