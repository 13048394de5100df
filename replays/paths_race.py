"""The second shipped recording: two agents on two different steps whose paths overlap.

Agent A claims "Rotate refresh tokens across the auth package" (reserving
`internal/auth/**`); agent B's claim of "Rate-limit POST /auth/refresh" (declaring
`internal/auth/refresh.go`) bounces off A's reservation, B lists the ready steps again and
claims the one that collides with nothing (docs); both complete. The agents are scripted,
one call after the other, on a clock that moves only when told and with ids counted from
one, so `write_paths_race` writes the same bytes every time:

    python -m planledger.replays.paths_race replays/two-agents-paths.jsonl
"""

import itertools
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ulid import ULID

from planledger.api import path_reads
from planledger.api.guard import refusals
from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain.errors import PathsHeld
from planledger.ledger.domain.paths import PathSpec
from planledger.ledger.ports import Clock, IdGenerator
from planledger.replays.format import write_file
from planledger.replays.recording import export

PLAN = "auth-paths"
START = datetime(2026, 12, 2, 9, 0, 0, tzinfo=UTC)
ROTATE = NewStep("Rotate refresh tokens across the auth package", key="rotate",
                 paths=(PathSpec("internal/auth/**"),))
LIMIT = NewStep("Rate-limit POST /auth/refresh", key="limit",
                paths=(PathSpec("internal/auth/refresh.go"),))
DOCS = NewStep("Document the refresh endpoint", key="docs", paths=(PathSpec("docs/auth.md"),))
B_COMMITS = "internal/auth/refresh.go"  # what B's commit would touch, had it edited it anyway


class StepClock(Clock):
    """Stands still until the story moves it on."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at

    def tick(self, seconds: float = 1.0) -> None:
        self.at += timedelta(seconds=seconds)


class CountingIds(IdGenerator):
    """ULID-shaped ids counted from one, their time part `START` plus the count in ms."""

    def __init__(self) -> None:
        self._count = itertools.count(1)
        self._millis = int(START.timestamp() * 1000)

    def new_id(self) -> str:
        n = next(self._count)
        return str(ULID.from_bytes((self._millis + n).to_bytes(6, "big") + n.to_bytes(10, "big")))


@dataclass(frozen=True)
class PathsRace:
    """Who did what, and what the commit guard would have told B."""

    agent_a: str
    agent_b: str
    steps: tuple[str, str, str]  # rotate, limit, docs
    bounce: str  # B's claim of `limit`, refused
    guard: str  # `planledger guard check`'s line for B's commit of B_COMMITS


def play(runtime: Runtime, clock: StepClock) -> PathsRace:
    """Run the story on `runtime`, moving `clock` a second or more between calls."""
    ledger = runtime.ledger
    planner = ledger.start_session("planner").id
    clock.tick()
    _, (rotate, limit, docs) = ledger.create_plan(
        PLAN, "Refresh tokens, by path", steps=[ROTATE, LIMIT, DOCS], actor=planner)
    ledger.end_session(planner)
    clock.tick(60)
    a, b = (ledger.start_session(name).id for name in ("agent A", "agent B"))
    clock.tick(2)
    ledger.list_ready(PLAN, a)
    ledger.list_ready(PLAN, b)
    clock.tick(3)
    grant_a = ledger.claim(rotate, a)
    clock.tick()
    try:
        ledger.claim(limit, b)
        raise AssertionError("B's claim should bounce off A's internal/auth/**")
    except PathsHeld as held:
        bounce = str(held)
    guard = _guard_line(runtime, b)
    clock.tick(2)
    # Ready now: limit (still open, its paths held) and docs. B passes by what it bounced on.
    pivot = next(s for s in ledger.list_ready(PLAN, b) if s != limit)
    grant_b = ledger.claim(pivot, b)
    clock.tick(240)
    ledger.complete(pivot, b, grant_b.fence)
    clock.tick(180)
    ledger.complete(rotate, a, grant_a.fence)
    return PathsRace(a, b, (rotate, limit, docs), bounce, guard)


def _guard_line(runtime: Runtime, committer: str) -> str:
    """What `planledger guard check` prints for `committer` committing B_COMMITS now."""
    (refusal,) = refusals([B_COMMITS], lambda files: path_reads.check(
        runtime, files=files, exclusive_only=True, but=committer))
    return refusal.describe()


def write_paths_race(path: Path) -> PathsRace:
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
    told = write_paths_race(Path(sys.argv[1] if len(sys.argv) > 1 else "two-agents-paths.jsonl"))
    print(f"B bounced: {told.bounce}\nguard for B's commit: {told.guard}")
