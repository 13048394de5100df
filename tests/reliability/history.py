"""A small history checker: calls that clients saw (start, end, answer) checked against a
model of a lease, per step.

Every call happened at some moment between its start and its end (client clock; the server
runs on the same machine, so its `expires_at` is on the same clock). A call whose answer
never came ("unknown": a timeout, a dropped connection, a 5xx) may have happened or not.
The checker reports only what must be wrong whichever way those uncertainties fall:

- double grant: one fence granted twice (fences grow with every grant);
- fence order: a grant certainly made before another carries the larger fence;
- overlap: a grant made while an earlier holder's lease was certainly live and nothing
  could have ended it (no release, completion or session end started before);
- stale close: a completion or release accepted from a session that certainly was not the
  live holder with the current fence (a later grant, a lapsed lease, closed already);
- closed twice / granted after completion;
- false bounce: a refusal naming a holder (and fence) that was certainly not live;
- lost hold: a refusal of the certainly-live holder's own heartbeat, completion or release.

A violation carries its witnesses: the few calls that together show it.
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

EPS = 0.002  # seconds of clock rounding a bound may be off by; bounds err on "no violation"
RELEASING = ("complete", "release")


@dataclass(frozen=True)
class Call:
    agent: str  # the session the call acted for
    op: str  # claim | heartbeat | complete | release | end
    step: str | None  # None for a session end
    start: float
    end: float
    outcome: str  # ok | refused | unknown
    fence: int | None = None  # granted (claim, heartbeat) or carried (complete, release)
    expires: float | None = None  # a granted lease's end
    renewed: bool = False
    reason: str | None = None  # a refusal's reason
    holder: str | None = None  # the holder a bounce named
    lease: float = 0.0  # the lease asked for

    @property
    def grant(self) -> bool:
        return self.op == "claim" and self.outcome == "ok" and not self.renewed

    @property
    def renewal(self) -> bool:
        return self.op in ("claim", "heartbeat") and self.outcome == "ok" and self.renewed


@dataclass(frozen=True)
class Violation:
    rule: str
    step: str | None
    message: str
    witnesses: tuple[Call, ...]

    def describe(self) -> str:
        """The violation and its minimal history, times relative to its first call."""
        calls = sorted(set(self.witnesses), key=lambda c: (c.start, c.end))
        zero = calls[0].start if calls else 0.0
        lines = [f"history violation ({self.rule}) on step {self.step}: {self.message}"]
        lines += [f"  {_show(c, zero)}" for c in calls]
        return "\n".join(lines)


def _show(call: Call, zero: float) -> str:
    span = f"+{call.start - zero:.3f}s..+{call.end - zero:.3f}s"
    answer = call.outcome
    if call.fence is not None:
        answer += f" fence {call.fence}"
    if call.expires is not None:
        answer += f", lease until +{call.expires - zero:.3f}s"
    if call.renewed:
        answer += " (renewal)"
    if call.reason:
        answer += f" {call.reason}" + (f' held by "{call.holder}"' if call.holder else "")
    return f"{span}  {call.agent}  {call.op:<9} -> {answer}"


@dataclass
class _Step:
    """One step's calls, and what they establish about each fence."""

    step: str
    calls: list[Call]
    ends: dict[str, list[Call]]  # session ends (ok or unknown) by session
    grants: dict[int, Call] = field(default_factory=dict)
    renewals: dict[int, list[Call]] = field(default_factory=lambda: defaultdict(list))

    def _setting(self, fence: int, moment: float) -> list[Call]:
        """The calls that may have set the fence's lease last before `moment`: its grant,
        the holder's renewals of it and its claims and heartbeats whose answer was lost
        (a renewal can shorten a lease too), less those an acknowledged renewal certainly
        followed."""
        granted = self.grants[fence]
        calls = [granted, *self.renewals[fence], *[
            c for c in self.calls if c.agent == granted.agent and c.outcome == "unknown"
            and c.op in ("claim", "heartbeat") and c.start > granted.start]]
        calls = [c for c in calls if c.start < moment]
        acks = [c for c in calls if c.outcome == "ok"]
        return [c for c in calls if not any(r.start > c.end and r.end < moment for r in acks)]

    def lease_at_least(self, fence: int, moment: float) -> tuple[float, list[Call]]:
        """The earliest the fence's lease can end, as it stood at `moment`, and the calls
        that show it."""
        setting = self._setting(fence, moment)
        if not setting:
            return float("-inf"), [self.grants[fence]]
        low = min(setting, key=_low)
        return _low(low), [self.grants[fence], *setting]

    def lease_at_most(self, fence: int, moment: float) -> float:
        """The latest the fence's lease can end, as it stood at `moment`."""
        return max((_high(c) for c in self._setting(fence, moment)), default=float("inf"))

    def maybe_granted(self, agent: str, before: float) -> bool:
        """Whether a claim of the agent whose answer was lost started before `before`."""
        return any(c.agent == agent and c.op == "claim" and c.outcome == "unknown"
                   and c.start < before for c in self.calls)

    def could_end_before(self, fence: int, moment: float) -> bool:
        """Whether the fence's holder may have released it (or ended its session) before."""
        holder = self.grants[fence].agent
        closes = [c for c in self.calls if c.agent == holder and c.op in RELEASING
                  and c.outcome != "refused" and c.fence in (fence, None)]
        return any(c.start < moment for c in [*closes, *self.ends.get(holder, [])])

    def certainly_ended_before(self, fence: int, moment: float) -> Call | None:
        """A call showing the fence no longer held at `moment`, if there is one."""
        holder = self.grants[fence].agent
        for c in self.calls:
            if c.end >= moment - EPS or c.outcome != "ok":
                continue
            if (c.agent == holder and c.op in RELEASING and c.fence == fence) or (
                    c.grant and c.fence is not None and c.fence > fence) or c.op == "complete":
                return c
        return next((c for c in self.ends.get(holder, []) if c.outcome == "ok"
                     and c.end < moment - EPS and c.start > self.grants[fence].end), None)


def _low(call: Call) -> float:
    return call.expires if call.expires is not None else call.start + call.lease


def _high(call: Call) -> float:
    return call.expires if call.expires is not None else call.end + call.lease


def check(history: Iterable[Call]) -> list[Violation]:
    """Every violation the history shows, per step (see the module doc)."""
    calls = list(history)
    ends: dict[str, list[Call]] = defaultdict(list)
    for c in calls:
        if c.op == "end" and c.outcome != "refused":
            ends[c.agent].append(c)
    by_step: dict[str, list[Call]] = defaultdict(list)
    for c in calls:
        if c.step is not None:
            by_step[c.step].append(c)
    found: list[Violation] = []
    for step, step_calls in sorted(by_step.items()):
        found += _check_step(_Step(step, sorted(step_calls, key=lambda c: c.start), ends))
    return found


def _check_step(s: _Step) -> list[Violation]:
    found: list[Violation] = []
    for c in s.calls:
        if c.grant and c.fence is not None:
            if c.fence in s.grants:
                found.append(Violation("double grant", s.step, f"fence {c.fence} granted "
                                       "twice", (s.grants[c.fence], c)))
            s.grants.setdefault(c.fence, c)
    for c in s.calls:
        if not c.renewal or c.fence is None:
            continue
        if c.fence in s.grants and s.grants[c.fence].agent == c.agent:
            s.renewals[c.fence].append(c)
        elif c.fence not in s.grants and s.maybe_granted(c.agent, c.end):
            s.grants[c.fence] = c  # its grant's answer was lost: the renewal stands for it
        else:
            found.append(Violation("renewal by a stranger", s.step, f"{c.agent} renewed "
                                   f"fence {c.fence}, which was not granted to it", (c,)))
    found += _grant_rules(s) + _close_rules(s) + _bounce_rules(s) + _lost_holds(s)
    return found


def _grant_rules(s: _Step) -> list[Violation]:
    found: list[Violation] = []
    fences = sorted(s.grants)
    completed = [c for c in s.calls if c.op == "complete" and c.outcome == "ok"]
    for i, f in enumerate(fences):
        for g in fences[i + 1:]:
            first, later = s.grants[f], s.grants[g]
            if later.end < first.start:
                found.append(Violation("fence order", s.step, f"fence {g} was granted before "
                                       f"fence {f}", (first, later)))
            until, shown = s.lease_at_least(f, later.end)
            if later.end < until - EPS and not s.could_end_before(f, later.end):
                found.append(Violation(
                    "overlap", s.step, f'fence {g} granted to "{later.agent}" while '
                    f'"{first.agent}" certainly held fence {f} live, and nothing released it',
                    (*shown, later)))
        for done in completed:
            if s.grants[f].start > done.end + EPS:
                found.append(Violation("granted after completion", s.step, f"fence {f} "
                                       "granted after the step was completed",
                                       (done, s.grants[f])))
    if len(completed) > 1:
        found.append(Violation("closed twice", s.step, f"{len(completed)} completions "
                               "accepted", tuple(completed)))
    return found


def _close_rules(s: _Step) -> list[Violation]:
    found: list[Violation] = []
    for c in s.calls:
        if c.op not in RELEASING or c.outcome != "ok" or c.fence is None:
            continue
        grant = s.grants.get(c.fence)
        if grant is None or grant.agent != c.agent:
            if grant is not None or not s.maybe_granted(c.agent, c.end):
                found.append(Violation("stale close", s.step, f'{c.op} by "{c.agent}" with '
                                       f"fence {c.fence}, never granted to it",
                                       (c, *([grant] if grant else []))))
            continue
        gone = s.certainly_ended_before(c.fence, c.start)
        if gone is not None and gone is not c:
            found.append(Violation("stale close", s.step, f"{c.op} with fence {c.fence} "
                                   "accepted after the fence was certainly no longer held",
                                   (grant, gone, c)))
        elif c.start > s.lease_at_most(c.fence, c.end) + EPS:
            found.append(Violation("stale close", s.step, f"{c.op} with fence {c.fence} "
                                   "accepted after its lease certainly lapsed",
                                   (*s.lease_at_least(c.fence, c.end)[1], c)))
    return found


def _bounce_rules(s: _Step) -> list[Violation]:
    found: list[Violation] = []
    for b in s.calls:
        if b.outcome != "refused" or b.reason != "already_claimed" or b.fence is None:
            continue
        grant = s.grants.get(b.fence)
        if grant is None:
            if b.holder is None or not s.maybe_granted(b.holder, b.end):
                found.append(Violation("false bounce", s.step, f'bounce names "{b.holder}" '
                                       f"at fence {b.fence}, which nobody was granted", (b,)))
            continue
        if grant.agent != b.holder:
            found.append(Violation("false bounce", s.step, f'bounce names "{b.holder}" but '
                                   f'fence {b.fence} was granted to "{grant.agent}"',
                                   (grant, b)))
        elif (gone := s.certainly_ended_before(b.fence, b.start)) is not None:
            found.append(Violation("false bounce", s.step, f'bounce names "{b.holder}", '
                                   f"whose fence {b.fence} had certainly ended",
                                   (grant, gone, b)))
        elif b.start > s.lease_at_most(b.fence, b.end) + EPS:
            found.append(Violation("false bounce", s.step, f'bounce names "{b.holder}", '
                                   f"whose lease had certainly lapsed",
                                   (*s.lease_at_least(b.fence, b.end)[1], b)))
    return found


def _lost_holds(s: _Step) -> list[Violation]:
    """A refusal of the holder's own call while its lease was certainly live and nothing
    it did could have ended it: the ledger lost (or never honoured) a grant."""
    found: list[Violation] = []
    for c in s.calls:
        if c.outcome != "refused" or c.op not in ("heartbeat", *RELEASING):
            continue
        mine = [f for f, g in s.grants.items() if g.agent == c.agent and g.end < c.start
                and (c.fence is None or f == c.fence)]
        if not mine:
            continue
        fence = max(mine)
        until, shown = s.lease_at_least(fence, c.end)
        if c.end < until - EPS and not s.could_end_before(fence, c.end) and not any(
                g.start < c.end for f, g in s.grants.items() if f > fence):
            found.append(Violation("lost hold", s.step, f'"{c.agent}" certainly held fence '
                                   f"{fence} live, yet its {c.op} was refused ({c.reason})",
                                   (*shown, c)))
    return found


def describe(violations: Sequence[Violation]) -> str:
    return "\n\n".join(v.describe() for v in violations) or "no violations"
