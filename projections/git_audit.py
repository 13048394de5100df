"""Check the git history against the ledger.

The audit finds four kinds of problems:

- commits made outside a live claim;
- commits that touched files another session held reserved;
- completions that name commits the history does not hold;
- commits that name claims the ledger never granted.

Commits say who made them through trailers that the commit guard's `prepare-commit-msg`
hook writes: `Planledger-Step: <plan>#<number> <step id>`, `Planledger-Session: <id>`
and `Planledger-Fence: <n>`. Each claim has one Step and Fence pair, paired in order.

A commit's date is the committer's word, and anyone can set it. Where the ledger knows
better, the commit is judged at the ledger's time instead. A commit whose trailers name
a claim was made after that grant. A commit that a completion names was made before that
completion. A date that is outside either limit by more than the allowed bound is a
finding of its own, and the commit is then judged at the ledger's time.

This is a read-side rule on plain values: the commits (read from git by
infra.git_history) and the claims (projections.claim_history).
"""

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from planledger.ledger.domain.paths import covers
from planledger.projections.claim_history import Claim, ClaimHistory, Completion

STEP_TRAILER = "Planledger-Step"
SESSION_TRAILER = "Planledger-Session"
FENCE_TRAILER = "Planledger-Fence"
TRAILER_KEYS = (STEP_TRAILER, SESSION_TRAILER, FENCE_TRAILER)
DEFAULT_BOUND = timedelta(seconds=120)
MAX_TRAILERS = 100  # planledger trailers one commit may carry and still be read
MAX_VALUE = 300  # characters of one trailer's value
SHOWN_FILES = 5  # files a finding names; it counts the rest
_STEP_VALUE = re.compile(r"(\S{1,200}) ([0-9A-Za-z]{1,64})")
_ID = re.compile(r"[0-9A-Za-z]{1,64}")

FindingKind = Literal["outside_claim", "into_reservation", "evidence_missing",
                      "unknown_claim", "clock_disagrees"]
KINDS: tuple[FindingKind, ...] = ("outside_claim", "into_reservation", "evidence_missing",
                                  "unknown_claim", "clock_disagrees")


@dataclass(frozen=True)
class Commit:
    """A commit as git holds it: its sha, its committer date (None: none that reads), its
    trailers in order (key, value), and the files it changes against its first parent."""

    sha: str
    committed_at: datetime | None
    trailers: tuple[tuple[str, str], ...] = ()
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    """Something the history and the ledger disagree on, naming the commit, the step and
    the session where it can (a step as `plan#number`, and its id)."""

    kind: FindingKind
    commit: str
    text: str
    step: str | None = None
    step_id: str | None = None
    session: str | None = None
    committed_at: datetime | None = None  # as the commit says
    judged_at: datetime | None = None  # the time the commit was judged at
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Report:
    """What `audit` found in `commits_read` commits."""

    commits_read: int
    findings: tuple[Finding, ...]
    more: bool = False  # the history holds more commits than were read
    bound_seconds: float = DEFAULT_BOUND.total_seconds()
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        plain: dict[str, Any] = _plain(self)
        return plain


@dataclass(frozen=True)
class Named:
    """What a commit's planledger trailers name: a session and claims (ref, id, fence)."""

    session: str | None
    claims: tuple[tuple[str, str, int], ...]
    problem: str | None = None


def paired(trailers: Sequence[tuple[str, str]]) -> tuple[list[tuple[str, str]], int]:
    """The (step, fence) pairs among `trailers`: each Planledger-Step with the
    Planledger-Fence that follows it before the next Step; and how many were left
    without their other half."""
    pairs: list[tuple[str, str]] = []
    step: str | None = None
    loose = 0
    for key, value in trailers:
        if key.lower() == STEP_TRAILER.lower():
            loose += step is not None
            step = value.strip()
        elif key.lower() == FENCE_TRAILER.lower():
            if step is None:
                loose += 1
            else:
                pairs.append((step, value.strip()))
                step = None
    return pairs, loose + (step is not None)


def named_by(trailers: Sequence[tuple[str, str]]) -> Named | None:
    """The claims a commit's trailers name; None when it carries no planledger trailer."""
    ours = [(k, v) for k, v in trailers if k.lower() in {t.lower() for t in TRAILER_KEYS}]
    if not ours:
        return None
    if len(ours) > MAX_TRAILERS or any(len(v) > MAX_VALUE for _, v in ours):
        return Named(None, (), "planledger trailers too many or too long to read")
    pairs, loose = paired(ours)
    sessions = list(dict.fromkeys(v.strip() for k, v in ours
                                  if k.lower() == SESSION_TRAILER.lower()))
    session = sessions[0] if len(sessions) == 1 and _ID.fullmatch(sessions[0]) else None
    problem = None
    if len(sessions) != 1 or session is None:
        problem = "no one readable Planledger-Session trailer"
    elif loose or not pairs:
        problem = (f"{loose} Planledger-Step or -Fence trailer(s) without the other"
                   if loose else "no Planledger-Step trailer")
    claims = []
    for step, fence in pairs:
        parts = _STEP_VALUE.fullmatch(step)
        if parts is None or not fence.isdigit() or len(fence) > 18:
            problem = problem or f"a Planledger-Step {step[:80]!r} / Fence {fence[:20]!r} " \
                                 "that does not read"
            continue
        claims.append((parts.group(1), parts.group(2), int(fence)))
    return Named(session, tuple(claims), problem)


def audit(commits: Iterable[Commit], history: ClaimHistory,
          in_history: Callable[[Sequence[str]], set[str]],
          bound: timedelta = DEFAULT_BOUND, more: bool = False) -> Report:
    """Judge every commit against the claims, and every completion's commits against the
    history (`in_history` answers which of some shas, abbreviated or whole, it holds)."""
    named_in = _named_in_evidence(history.completions)
    reserving = [c for c in history.claims.values() if any(p.exclusive for p in c.paths)]
    findings: list[Finding] = []
    read = 0
    for commit in commits:
        read += 1
        findings += _judged(commit, history, reserving, named_in(commit.sha), bound)
    findings += _missing_evidence(history.completions, in_history)
    counts: dict[str, int] = {kind: sum(f.kind == kind for f in findings) for kind in KINDS}
    return Report(read, tuple(findings), more, bound.total_seconds(), counts)


def _named_in_evidence(completions: Sequence[Completion],
                       ) -> Callable[[str], list[Completion]]:
    by_prefix: dict[str, list[Completion]] = {}
    for completion in completions:
        for sha in completion.commits:
            by_prefix.setdefault(sha, []).append(completion)
    lengths = sorted({len(s) for s in by_prefix})

    def naming(sha: str) -> list[Completion]:
        return [c for n in lengths for c in by_prefix.get(sha[:n], ())]

    return naming


def _judged(commit: Commit, history: ClaimHistory, reserving: Sequence[Claim],
            completions: Sequence[Completion], bound: timedelta) -> list[Finding]:
    named = named_by(commit.trailers)
    findings: list[Finding] = []
    matched: list[Claim] = []
    if named is not None:
        findings += _unmatched(commit, named, history, matched)
    moment, clock = _judged_at(commit, matched, completions, bound)
    findings += clock
    if moment is None:
        return findings
    session = named.session if named is not None else None
    for claim in matched:
        why = claim.not_live_at(moment, history.sessions_ended.get(claim.session_id))
        if why is not None:
            reason, since = why
            findings.append(_about(claim, commit, "outside_claim", moment,
                                   f"made under {claim.ref} (fence {claim.fence}) after the "
                                   f"claim stopped holding: {reason} at {since.isoformat()}"))
    findings += _into_reservations(commit, session, reserving, history, moment)
    return findings


def _unmatched(commit: Commit, named: Named, history: ClaimHistory,
               matched: list[Claim]) -> list[Finding]:
    found = []

    def unknown(text: str, step: str | None = None, step_id: str | None = None) -> None:
        found.append(Finding("unknown_claim", commit.sha, text, step, step_id,
                             named.session, commit.committed_at))

    if named.problem is not None:
        unknown(f"planledger trailers that do not read: {named.problem}")
    for ref, step_id, fence in named.claims:
        claim = history.claim(step_id, fence)
        if claim is None:
            unknown(f"names {ref} {step_id} under fence {fence}: the ledger never granted "
                    "that claim", ref, step_id)
        elif named.session is not None and claim.session_id != named.session:
            unknown(f"names {ref} under fence {fence} for session {named.session}, but that "
                    f"claim was granted to {claim.session_id}", ref, step_id)
        elif ref != claim.ref:
            unknown(f"names {ref} for step {step_id}, which is {claim.ref}", ref, step_id)
        elif named.session is not None:
            matched.append(claim)
    return found


def _judged_at(commit: Commit, matched: Sequence[Claim], completions: Sequence[Completion],
               bound: timedelta) -> tuple[datetime | None, list[Finding]]:
    """The time to judge the commit at: its date, unless the ledger knows better."""
    moment = commit.committed_at
    findings = []
    dated = "no readable date" if moment is None else f"dated {moment.isoformat()}"
    if matched:
        granted = max(matched, key=lambda c: c.granted_at)
        if moment is None or moment < granted.granted_at - bound:
            findings.append(_about(granted, commit, "clock_disagrees", granted.granted_at,
                                   f"{dated}, before {granted.ref} was granted at "
                                   f"{granted.granted_at.isoformat()}, which its trailers "
                                   "name: judged at the grant"))
        if moment is None or moment < granted.granted_at:
            moment = granted.granted_at
    if completions:
        first = min(completions, key=lambda c: c.at)
        if moment is not None and moment > first.at + bound and (
                commit.committed_at is None or commit.committed_at > first.at + bound):
            findings.append(Finding(
                "clock_disagrees", commit.sha, f"{dated}, after {first.ref} was completed "
                f"at {first.at.isoformat()} naming it: judged at the completion", first.ref,
                first.step_id, first.session_id, commit.committed_at, first.at))
        if moment is None or moment > first.at:
            moment = first.at
    return moment, findings


def _into_reservations(commit: Commit, session: str | None, reserving: Sequence[Claim],
                       history: ClaimHistory, moment: datetime) -> list[Finding]:
    found = []
    for claim in reserving:
        if claim.session_id == session or claim.not_live_at(
                moment, history.sessions_ended.get(claim.session_id)) is not None:
            continue
        patterns = [p.pattern for p in claim.paths if p.exclusive]
        files = tuple(f for f in commit.files if any(covers(p, f) for p in patterns))
        if not files:
            continue
        shown = ", ".join(files[:SHOWN_FILES]) + (
            f" and {len(files) - SHOWN_FILES} more" if len(files) > SHOWN_FILES else "")
        who = f"session {session}" if session else "a commit without planledger trailers"
        found.append(Finding(
            "into_reservation", commit.sha, f"{who} changed {shown}, under "
            f"{claim.session_id}'s exclusive reservation ({', '.join(patterns)}) for "
            f"{claim.ref} (fence {claim.fence})", claim.ref, claim.step_id, session,
            commit.committed_at, moment, files))
    return found


def _missing_evidence(completions: Sequence[Completion],
                      in_history: Callable[[Sequence[str]], set[str]]) -> list[Finding]:
    named = list(dict.fromkeys(s for c in completions for s in c.commits))
    held = in_history(named) if named else set()
    return [Finding("evidence_missing", sha, f"{c.ref} was completed at {c.at.isoformat()} "
                    f"naming commit {sha}, which the history does not hold (rewritten, "
                    "never pushed here, or made up)", c.ref, c.step_id, c.session_id,
                    judged_at=c.at)
            for c in completions for sha in c.commits if sha not in held]


def _about(claim: Claim, commit: Commit, kind: FindingKind, moment: datetime,
           text: str) -> Finding:
    """A finding about a commit made under `claim`, by the claim's session."""
    return Finding(kind, commit.sha, text, claim.ref, claim.step_id, claim.session_id,
                   commit.committed_at, moment)


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, datetime):
        return value.isoformat()
    return value
