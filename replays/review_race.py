"""The third shipped recording: the race's two agents on a plan that requires reviews.

Agent A and agent B both go for the plan's first step; A's claim lands and B's bounces.
A completes it with its evidence (a commit, a failed check), so the step waits in review;
A's review of its own work is refused (four eyes). B takes the step to review and rejects
it, naming the failed check; A claims it again, reads B's note, and completes it with a
passing check; B approves, which unblocks the second step. The agents are scripted, one
call after the other, on a clock that moves only when told and with ids counted from one
(replays.paths_race's), so `write_review_race` writes the same bytes every time:

    python -m planledger.replays.review_race replays/two-agents-review.jsonl
"""

import sys
from dataclasses import dataclass
from pathlib import Path

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger import commands as c
from planledger.ledger.domain.errors import AlreadyClaimed, OwnWork
from planledger.ledger.domain.evidence import Check, Evidence
from planledger.replays.format import write_file
from planledger.replays.paths_race import START, CountingIds, StepClock
from planledger.replays.recording import export

PLAN = "auth-review"
LIMIT = c.NewStep("Rate-limit POST /auth/refresh", key="limit")
ALERT = c.NewStep("Alert on refresh-token reuse", depends_on=("limit",))
FIRST_TRY = Evidence(commits=("4b825dc642cb6eb9a060e54bf8d69288fbee4904",),
                     branch="limiter", checks=(Check("tests", "fail", "pytest -q",
                                                     "1 failed: test_expired_token"),))
SECOND_TRY = Evidence(commits=("9fceb02d0ae598e95dc970b74767f19372d61af8",),
                      branch="limiter", checks=(Check("tests", "pass", "pytest -q",
                                                      "384 passed"),))
REJECTED = "tests fail on an expired token: the limiter must not count it"


@dataclass(frozen=True)
class ReviewRace:
    """Who did what: the agents, the steps, and what the refusals said."""

    agent_a: str
    agent_b: str
    steps: tuple[str, str]  # limit, alert
    bounce: str  # B's claim of `limit`, bounced off A
    own_review: str  # A's review of its own work, refused


def play(runtime: Runtime, clock: StepClock) -> ReviewRace:
    """Run the story on `runtime`, moving `clock` a second or more between calls."""
    ledger = runtime.ledger
    planner = ledger.start_session("planner").id
    clock.tick()
    made = ledger.execute(c.CreatePlan(PLAN, "Refresh tokens, reviewed", planner,
                                       steps=(LIMIT, ALERT), review_required=True))
    limit, alert = made.step_ids
    ledger.end_session(planner)
    clock.tick(60)
    a, b = (ledger.start_session(name).id for name in ("agent A", "agent B"))
    clock.tick(2)
    ledger.claim(limit, a)
    try:
        ledger.claim(limit, b)
        raise AssertionError("B's claim should bounce off A's")
    except AlreadyClaimed as held:
        bounce = str(held)
    clock.tick(300)
    ledger.execute(c.Complete(limit, a, evidence=FIRST_TRY))
    clock.tick()
    try:
        ledger.execute(c.Review(limit, a, "approve"))
        raise AssertionError("A's review of its own work should be refused")
    except OwnWork as own:
        own_review = str(own)
    clock.tick(30)
    ledger.execute(c.ClaimNext(PLAN, b, review=True))
    clock.tick(120)
    ledger.execute(c.Review(limit, b, "reject", REJECTED))
    clock.tick(5)
    ledger.claim(limit, a)
    clock.tick(200)
    ledger.execute(c.Complete(limit, a, evidence=SECOND_TRY))
    clock.tick(60)
    ledger.execute(c.Review(limit, b, "approve"))
    clock.tick(2)
    ledger.end_session(b)
    ledger.end_session(a)
    return ReviewRace(a, b, (limit, alert), bounce, own_review)


def write_review_race(path: Path) -> ReviewRace:
    """Play the story on a fresh in-memory ledger and write its recording to `path`."""
    clock = StepClock(START)
    runtime = open_runtime("memory", clock=clock, ids=CountingIds())
    try:
        story = play(runtime, clock)
        write_file(export(runtime.store, exported_at=clock.at), path)
    finally:
        runtime.close()
    return story


if __name__ == "__main__":
    told = write_review_race(Path(sys.argv[1] if len(sys.argv) > 1
                                  else "two-agents-review.jsonl"))
    print(f"B bounced: {told.bounce}\nA's own review: {told.own_review}")
