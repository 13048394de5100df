"""What-if: the same sessions' commands in other interleavings, and the outcomes.

Each session keeps its own order of commands; only the interleaving between sessions
changes, and only where sessions were active at once: the log splits into stretches of
overlapping sessions, and everything else (set-up, a session alone) stays in place. Each
interleaving re-executes on a fresh ledger (every command at its recorded time, with its
recorded ids). Its outcome: who won each step the overlapping sessions claimed, who lost
it, and each plan's progress.

Commands are replayed, not agents: a session's later commands do not adapt to a race it
lost. (In the two-agent race, had A won step 5, B's recorded completion of step 5 is
refused, since B never held it.)
"""

import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import product
from math import factorial, prod
from typing import Any

from eventsourcing.persistence import StoredEvent

from planledger.ledger.domain import events as ev
from planledger.ledger.notification_log import insert_stored
from planledger.projections.timeline import TimelineModel
from planledger.replays.format import CommandRecord, Recording
from planledger.replays.recording import decode, read_log
from planledger.replays.rerun import Replayer

Schedule = tuple[tuple[int, ...], ...]  # per explored stretch, the lane of each turn


@dataclass(frozen=True)
class Outcome:
    """Per claimed step: (step, winner, losers); then each plan's progress line."""

    steps: tuple[tuple[str, str | None, tuple[str, ...]], ...]
    progress: tuple[str, ...]

    def lines(self) -> list[str]:
        said = []
        for step, winner, losers in self.steps:
            won = f"{winner} wins it" if winner else "nobody wins it"
            lost = f"; {', '.join(losers)} loses it" if losers else ""
            said.append(f"{step}: {won}{lost}")
        return said + list(self.progress)


@dataclass(frozen=True)
class OutcomeCount:
    outcome: Outcome
    count: int
    recorded: bool  # the recorded interleaving leads here
    ways: tuple[tuple[str, int], ...]  # how the losers lost, with counts


@dataclass(frozen=True)
class ExploreReport:
    lanes: tuple[str, ...]
    possible: int
    tried: int
    exhaustive: bool
    seed: int | None
    outcomes: tuple[OutcomeCount, ...]

    def describe(self) -> str:
        how = "all of them" if self.exhaustive else \
            f"a sample of {self.tried} drawn with seed {self.seed}"
        lines = [f"{self.possible} interleavings of {', '.join(self.lanes) or 'no sessions'} "
                 f"({how}): {len(self.outcomes)} distinct outcome(s)"]
        for found in self.outcomes:
            mark = "  (the recorded one)" if found.recorded else ""
            lines.append(f"\n{found.count} x {found.outcome.lines()[0]}{mark}")
            lines += [f"      {line}" for line in found.outcome.lines()[1:]]
            lines += [f"      how: {way} ({n}x)" for way, n in found.ways]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"lanes": list(self.lanes), "possible": self.possible, "tried": self.tried,
                "exhaustive": self.exhaustive, "seed": self.seed,
                "outcomes": [{"count": o.count, "recorded": o.recorded,
                              "lines": o.outcome.lines(), "ways": dict(o.ways),
                              "steps": [{"step": s, "winner": w, "losers": list(lost)}
                                        for s, w, lost in o.outcome.steps]}
                             for o in self.outcomes]}


def explore(recording: Recording, *, limit: int = 1000, samples: int = 200,
            seed: int = 0) -> ExploreReport:
    """Try every interleaving when there are at most `limit`, else `samples` drawn with
    `seed`; count the distinct outcomes."""
    known = _Known(recording)
    stretches = _stretches(list(recording.commands))
    overlapping = [s for s in stretches if len(_lanes(s)) > 1]
    counts = [[len(q) for q in _lanes(s).values()] for s in overlapping]
    possible = prod(_multinomial(c) for c in counts)
    recorded = tuple(tuple(list(_lanes(s)).index(_lane(c)) for c in s) for s in overlapping)
    exhaustive = possible <= limit
    schedules = list(product(*(_orders(c) for c in counts))) if exhaustive \
        else _sample(counts, samples, seed, recorded)
    tally: Counter[Outcome] = Counter()
    ways: dict[Outcome, Counter[str]] = {}
    mine, base = None, _Base(stretches)
    for schedule in schedules:
        outcome, how = _run(base, schedule, known)
        tally[outcome] += 1
        ways.setdefault(outcome, Counter())[how] += 1
        mine = outcome if schedule == recorded else mine
    found = tuple(OutcomeCount(o, n, o == mine, tuple(ways[o].most_common()))
                  for o, n in tally.most_common())
    lanes = tuple(dict.fromkeys(known.name(k) for s in overlapping for k in _lanes(s)))
    return ExploreReport(lanes, possible, len(schedules), exhaustive,
                         None if exhaustive else seed, found)


def _lane(command: CommandRecord) -> str:
    """A session's commands share a lane; a command without a session is a lane alone."""
    return command.session or f"#{command.seq}"


def _stretches(commands: list[CommandRecord]) -> list[list[CommandRecord]]:
    """Split the commands where no session spans the cut."""
    last = {_lane(c): i for i, c in enumerate(commands)}
    stretches: list[list[CommandRecord]] = []
    reach = -1
    for i, command in enumerate(commands):
        if i > reach:
            stretches.append([])
        stretches[-1].append(command)
        reach = max(reach, last[_lane(command)])
    return stretches


def _lanes(stretch: list[CommandRecord]) -> dict[str, list[CommandRecord]]:
    lanes: dict[str, list[CommandRecord]] = {}
    for command in stretch:
        lanes.setdefault(_lane(command), []).append(command)
    return lanes


def _multinomial(counts: Sequence[int]) -> int:
    return factorial(sum(counts)) // prod(factorial(n) for n in counts)


def _orders(counts: list[int]) -> Iterator[tuple[int, ...]]:
    """Every sequence of lane numbers with lane i appearing counts[i] times."""
    if not any(counts):
        yield ()
        return
    for lane, left in enumerate(counts):
        if left:
            counts[lane] -= 1
            for rest in _orders(counts):
                yield (lane, *rest)
            counts[lane] += 1


def _sample(counts: list[list[int]], samples: int, seed: int,
            recorded: Schedule) -> list[Schedule]:
    """The recorded interleaving, then distinct ones drawn uniformly (a shuffled multiset
    of turns per stretch)."""
    rng = random.Random(seed)
    drawn: dict[Schedule, None] = {recorded: None}
    for _ in range(samples):
        schedule = []
        for lanes in counts:
            turns = [lane for lane, n in enumerate(lanes) for _ in range(n)]
            rng.shuffle(turns)
            schedule.append(tuple(turns))
        drawn.setdefault(tuple(schedule))
    return list(drawn)


class _Base:
    """The log as it stood before the first stretch of overlapping sessions: run once,
    then copied into each interleaving's fresh store (a copy costs far less than a run)."""

    def __init__(self, stretches: list[list[CommandRecord]]) -> None:
        first = next((i for i, s in enumerate(stretches) if len(_lanes(s)) > 1),
                     len(stretches))
        self.rest = stretches[first:]
        replayer = Replayer()
        try:
            for command in (c for stretch in stretches[:first] for c in stretch):
                replayer.run(command)
            self.events = [StoredEvent(n.originator_id, n.originator_version, n.topic, n.state)
                           for n in read_log(replayer.runtime.store)]
        finally:
            replayer.close()

    def replayer(self) -> Replayer:
        replayer = Replayer()
        if self.events:
            insert_stored(replayer.runtime.store, self.events)
            replayer.position = replayer.runtime.store.log_end()
        return replayer


def _run(base: _Base, schedule: Schedule, known: "_Known") -> tuple[Outcome, str]:
    replayer = base.replayer()
    turns = iter(schedule)
    produced: list[object] = []
    try:
        for stretch in base.rest:
            lanes = _lanes(stretch)
            order = stretch
            if len(lanes) > 1:
                queues = [iter(q) for q in lanes.values()]
                order = [next(queues[lane]) for lane in next(turns)]
            for command in order:
                got = replayer.run(command)[0]
                if len(lanes) > 1:
                    produced += [replayer.decode(g) for g in got]
        progress = replayer.runtime.reads.progress_all()
        return known.outcome(produced, tuple(p.rollup for p in progress))
    finally:
        replayer.close()


class _Known:
    """What the recording says about its sessions and steps, to name them in outcomes."""

    def __init__(self, recording: Recording) -> None:
        model = TimelineModel()
        for position, event in decode(recording):
            model.apply(position, event)
        timeline = model.timeline()
        self.names = {lane.session_id: lane.label for lane in timeline.lanes}
        self.steps: dict[str, str] = {}
        self.short: dict[str, str] = {}
        for entry in timeline.entries:
            if entry.step_id and entry.step_id not in self.steps:
                self.short[entry.step_id] = f"step {entry.step_number}"
                self.steps[entry.step_id] = f'step {entry.step_number} "{entry.step_title}"'

    def name(self, session: str | None) -> str:
        return self.names.get(session, str(session))

    def outcome(self, produced: list[object], progress: tuple[str, ...]) -> tuple[Outcome, str]:
        """Winners and losers of every step claimed in `produced`, and how losers lost."""
        winners: dict[str, str] = {}
        losers: dict[str, set[str]] = {}
        ways: set[str] = set()
        for e in produced:
            if isinstance(e, ev.StepClaimed):
                winners.setdefault(e.originator_id, self.name(e.session_id))
                losers.setdefault(e.originator_id, set())
            elif isinstance(e, ev.ClaimBounced | ev.ClaimRefused):
                who, label = self.name(e.session_id), self.short.get(e.step_id, e.step_id)
                losers.setdefault(e.step_id, set()).add(who)
                ways.add(f"{who} bounced off {self.name(e.holder)} on {label}"
                         if isinstance(e, ev.ClaimBounced) else
                         f"{who} was refused {label} ({e.reason})")
            elif isinstance(e, ev.PathsBounced):  # a claim that met another's paths
                who, label = self.name(e.session_id), self.short.get(e.step_id, e.step_id)
                losers.setdefault(e.step_id, set()).add(who)
                held = ", ".join(sorted({self.name(str(c["holder"])) for c in e.conflicts}))
                ways.add(f"{who} bounced off {held}'s paths on {label}")
        rank = list(self.steps)
        ordered = sorted(losers, key=lambda s: rank.index(s) if s in rank else len(rank))
        steps = tuple((self.steps.get(s, s), winners.get(s), tuple(sorted(losers[s])))
                      for s in ordered)
        return Outcome(steps, progress), "; ".join(sorted(ways)) or "no claim refused"
