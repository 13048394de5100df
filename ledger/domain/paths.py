"""Path patterns a step touches, and the rule for when two of them overlap.

A pattern is a glob relative to the repository root, written with `/` between segments:

- `*` matches any run of characters within one segment (dotfiles too), `?` exactly one;
- a segment that is exactly `**` matches any number of whole segments, none included
  (`**` inside a segment, as in `a**b`, is two `*`);
- every other character is itself (`[`, `]`, `{`, `}` included: `app/[id]/page.tsx`
  names that file), and matching is case-sensitive, as git's paths are.

A pattern whose last segment is a plain name (`internal/auth`, `auth.go`) names a file or a
directory, and so covers everything beneath it as well; a trailing `/` says the same
(`internal/auth/` is kept as `internal/auth/**`). A pattern whose last segment has a
wildcard (`*.go`, `internal/auth/*`) covers just the paths it matches: `**` reaches deeper.
Two patterns overlap when some path is covered by both, decided exactly, segment by
segment (`overlaps`), with no path ever listed. The ledger cannot tell a file from a
directory, so a plain name overlaps what could lie beneath it: `docs/readme.md` and
`**/*.go` overlap (on `docs/readme.md/x.go`).

Patterns are normalized when declared (`check_pattern`): `\\` becomes `/`, empty and `.`
segments go, runs of `*` within a segment become one, a run of `**` segments one; absolute
paths (`/x`, `C:/x`) and `..` segments anywhere are refused, naming the field.
"""

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from planledger.ledger.domain import errors

Mode = Literal["exclusive", "shared"]
MODES: tuple[Mode, ...] = ("exclusive", "shared")

MAX_PATTERN = 1_024  # characters, after normalization
MAX_SEGMENT = 255  # characters: a file name's limit on common file systems
MAX_STARS = 16  # `*` per pattern: the overlap decision grows with their product
MAX_SEGMENTS = 64  # `/`-separated parts per pattern: deeper than any repository's tree
MAX_PATHS = 100  # patterns per declaration (a step's, a claim's extra, a check's)


@dataclass(frozen=True)
class PathSpec:
    """A pattern a step reserves while claimed, exclusively (default) or shared."""

    pattern: str
    mode: Mode = "exclusive"

    @property
    def exclusive(self) -> bool:
        return self.mode == "exclusive"

    def as_record(self) -> dict[str, str]:
        """How events and answers carry it (JSON)."""
        return {"pattern": self.pattern, "mode": self.mode}

    @staticmethod
    def of_record(record: dict[str, str]) -> "PathSpec":
        return PathSpec(record["pattern"], "shared" if record.get("mode") == "shared"
                        else "exclusive")


# --- declaring ---------------------------------------------------------------------------


def check_pattern(pattern: str, field: str = "paths") -> str:
    """The pattern normalized, or InvalidInput naming `field` and what is wrong."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise errors.InvalidInput(field, "a path pattern must not be empty")
    if any(ord(c) < 32 or ord(c) == 127 for c in pattern):
        raise errors.InvalidInput(field, f"{pattern[:80]!r} contains control characters")
    text = pattern.replace("\\", "/")
    if text.startswith("/") or re.match(r"[A-Za-z]:(/|$)", text):
        raise errors.InvalidInput(field, f"{pattern[:80]!r} is absolute; give it relative to "
                                         "the repository root")
    segments = [_normal_segment(s) for s in text.split("/") if s not in ("", ".")]
    if segments and text.endswith("/"):
        segments.append("**")  # a directory: everything beneath it
    if ".." in segments:
        raise errors.InvalidInput(field, f"{pattern[:80]!r} has a '..' segment; give the "
                                         "path from the repository root without one")
    if not segments:
        raise errors.InvalidInput(field, f"{pattern[:80]!r} names no path (use '**' for the "
                                         "whole repository)")
    collapsed = [s for i, s in enumerate(segments) if not (s == "**" and i and
                                                           segments[i - 1] == "**")]
    normal = "/".join(collapsed)
    _check_size(field, pattern, normal, collapsed)
    return normal


def check_file(path: str, field: str = "files") -> str:
    """A file's path from the repository root, normalized as patterns are (its characters
    are its own: `*` in a file name is no wildcard)."""
    if not isinstance(path, str) or not path.strip():
        raise errors.InvalidInput(field, "a file path must not be empty")
    if any(ord(c) < 32 or ord(c) == 127 for c in path) or len(path) > 4 * MAX_PATTERN:
        raise errors.InvalidInput(field, f"{path[:80]!r} is not a file path")
    text = path.replace("\\", "/")
    if text.startswith("/") or re.match(r"[A-Za-z]:(/|$)", text):
        raise errors.InvalidInput(field, f"{path[:80]!r} is absolute")
    segments = [s for s in text.split("/") if s not in ("", ".")]
    if ".." in segments or not segments:
        raise errors.InvalidInput(field, f"{path[:80]!r} is not a path in the repository")
    return "/".join(segments)


def _normal_segment(segment: str) -> str:
    if segment == "**" or "**" not in segment:
        return segment
    while "**" in segment:
        segment = segment.replace("**", "*")
    return segment


def _check_size(field: str, given: str, normal: str, segments: Sequence[str]) -> None:
    if len(normal) > MAX_PATTERN:
        raise errors.InvalidInput(field, f"a pattern of {len(normal)} characters; the limit "
                                         f"is {MAX_PATTERN}")
    if len(segments) > MAX_SEGMENTS:
        raise errors.InvalidInput(field, f"{given[:80]!r} has {len(segments)} segments; the "
                                         f"limit is {MAX_SEGMENTS}")
    if any(len(s) > MAX_SEGMENT for s in segments):
        raise errors.InvalidInput(field, f"{given[:80]!r} has a segment longer than "
                                         f"{MAX_SEGMENT} characters")
    if sum(s.count("*") for s in segments if s != "**") + segments.count("**") > MAX_STARS:
        raise errors.InvalidInput(field, f"{given[:80]!r} has more than {MAX_STARS} '*'")


def check_paths(paths: Iterable[PathSpec], field: str = "paths") -> tuple[PathSpec, ...]:
    """Each pattern normalized, in the order given, once each (a pattern given both ways
    is exclusive); more than MAX_PATHS, or a mode other than the two, is refused."""
    given = list(paths)
    if len(given) > MAX_PATHS:
        raise errors.InvalidInput(field, f"{len(given)} paths; the limit is {MAX_PATHS}")
    checked: list[PathSpec] = []
    for spec in given:
        if spec.mode not in MODES:
            raise errors.InvalidInput(field, f"mode {str(spec.mode)[:40]!r} is not "
                                             "'exclusive' or 'shared'")
        checked.append(PathSpec(check_pattern(spec.pattern, field), spec.mode))
    return merge(checked)


def merge(*declarations: Iterable[PathSpec]) -> tuple[PathSpec, ...]:
    """The declarations as one, in first-seen order; a pattern exclusive in any of them is
    exclusive (a claim's extra paths can make a step's shared path exclusive)."""
    modes: dict[str, Mode] = {}
    for declared in declarations:
        for spec in declared:
            if modes.get(spec.pattern) != "exclusive":
                modes[spec.pattern] = spec.mode
    return tuple(PathSpec(p, m) for p, m in modes.items())


def restated(held: Iterable[PathSpec], given: Iterable[PathSpec]) -> tuple[PathSpec, ...]:
    """A holder's reservation with its heartbeat's paths: a pattern given again takes the
    mode given (re-reserving one's own exclusive pattern as shared shares it, as MCP Agent
    Mail's agents expect), new patterns are added."""
    modes: dict[str, Mode] = {spec.pattern: spec.mode for spec in held}
    modes.update((spec.pattern, spec.mode) for spec in given)
    return tuple(PathSpec(p, m) for p, m in modes.items())


def kept_exclusive(declared: Iterable[PathSpec], given: Iterable[PathSpec]) -> list[str]:
    """A warning for each pattern a new claim gives as shared that its step declares
    exclusive: the step's declaration stands, and the answer says so."""
    exclusive = {spec.pattern for spec in declared if spec.exclusive}
    return [f'"{spec.pattern}" stays exclusive: the step declares it so (its holder may '
            "share it by renewing the claim with it as shared)"
            for spec in given if not spec.exclusive and spec.pattern in exclusive]


def wide_patterns(paths: Iterable[PathSpec]) -> list[str]:
    """A warning for each pattern made only of wildcards (`**`, `**/*`, `*`): it reserves
    the whole repository, or every name at a depth, so every claim whose paths meet it
    bounces while it is held. MCP Agent Mail flags the same patterns."""
    warnings = []
    for spec in paths:
        segments = spec.pattern.split("/")
        if not all(set(segment) == {"*"} for segment in segments):
            continue
        if "**" in segments:
            reach = "the whole repository"
        elif len(segments) == 1:
            reach = "every file and directory name at the repository root"
        else:
            reach = f"every path {len(segments)} segments deep"
        warnings.append(f'"{spec.pattern}" reserves {reach}: while a claim holds it, every '
                        "claim whose paths meet it bounces; name the directories the step "
                        "touches instead")
    return warnings


# --- deciding overlap ----------------------------------------------------------------------
# A pattern compiles to segments; a segment to tokens. Both levels are the same question,
# "do two sequences with a star token share a word?", answered by searching the pairs of
# positions the two sequences can reach together (their automata's product): a pair moves
# on when both consume one item they both accept, or when either skips its star.
#
# The search is bounded, so no pattern a client may declare makes a request take long.
# One question (two patterns, or a pattern and a file) may visit QUESTION_STATES pairs of
# positions, at both levels together; past that it is answered "they overlap", which errs
# on the safe side (a claim bounces, the commit guard refuses, a check lists the holder).
# Patterns as people write them decide in a few dozen. A request asks many questions
# (a claim's patterns against every live reservation's, a check's files against them):
# it shares one Budget of REQUEST_STATES among them all, and is refused (OverBudget)
# when that runs out, before anything is written.
QUESTION_STATES = 8_192
REQUEST_STATES = 250_000


class OverBudget(errors.InvalidInput):
    """A request's overlap questions would take more than its budget to decide."""

    def __init__(self, field: str = "paths") -> None:
        super().__init__(field, "deciding these patterns against the live reservations "
                                "takes too long; declare fewer, or plainer, patterns")


class _QuestionTooHard(Exception):
    """One question reached QUESTION_STATES: answered as an overlap."""


class Budget:
    """The pairs of positions a request's overlap questions may still visit."""

    __slots__ = ("field", "left", "question_left")

    def __init__(self, states: int = REQUEST_STATES, field: str = "paths") -> None:
        self.left = states
        self.question_left = QUESTION_STATES
        self.field = field

    def spend(self) -> None:
        self.left -= 1
        self.question_left -= 1
        if self.left < 0:
            raise OverBudget(self.field)
        if self.question_left < 0:
            raise _QuestionTooHard

    def ask(self, question: Callable[["Budget"], bool]) -> bool:
        """The question's answer; True ("they overlap") when it is too hard to decide."""
        self.question_left = QUESTION_STATES
        try:
            return question(self)
        except _QuestionTooHard:
            return True


class _Star:
    """`*` within a segment, `**` among segments: any number of items."""


class _One:
    """`?`: exactly one character."""


STAR, ONE = _Star(), _One()
GLOBSTAR = STAR  # at the segment level
Token = str | _Star | _One
Segment = tuple[Token, ...]
Compiled = tuple[Segment | _Star, ...]


def _meets(a: Sequence[object], b: Sequence[object],
           accept_both: Callable[[object, object, Budget], bool], budget: Budget) -> bool:
    """Whether the sequences share a word; `accept_both(x, y, budget)` says whether some
    one item is accepted by both tokens (a star accepts any)."""
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    n, m = len(a), len(b)
    while todo:
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        budget.spend()
        if i == n and j == m:
            return True
        x = a[i] if i < n else None
        y = b[j] if j < m else None
        if x is STAR:
            todo.append((i + 1, j))
        if y is STAR:
            todo.append((i, j + 1))
        if x is not None and y is not None and not (x is STAR and y is STAR) \
                and accept_both(x, y, budget):
            todo.append((i if x is STAR else i + 1, j if y is STAR else j + 1))
    return False


def _chars_meet(x: object, y: object, budget: Budget) -> bool:
    return x is STAR or y is STAR or x is ONE or y is ONE or x == y


def _segments_meet(x: object, y: object, budget: Budget) -> bool:
    # Every segment pattern matches some non-empty name, so `**` meets any; two patterns
    # of one segment share a name when their tokens share a word (two all-star segments
    # share the empty word, and every other word as well).
    if x is GLOBSTAR or y is GLOBSTAR:
        return True
    assert isinstance(x, tuple) and isinstance(y, tuple)
    return _meets(x, y, _chars_meet, budget)


@lru_cache(maxsize=4_096)
def _compiled(pattern: str) -> Compiled:
    """The pattern's segments; `**` appended after a plain name, which covers what lies
    beneath it."""
    segments: list[Segment | _Star] = []
    for text in pattern.split("/"):
        if text == "**":
            segments.append(GLOBSTAR)
        else:
            segments.append(tuple(STAR if c == "*" else ONE if c == "?" else c for c in text))
    last = segments[-1]
    if isinstance(last, tuple) and all(isinstance(t, str) for t in last):
        segments.append(GLOBSTAR)
    return tuple(segments)


_DECIDED: dict[tuple[str, str], bool] = {}  # overlaps' answers, so a pair costs once
_DECIDED_MAX = 65_536


def overlaps(a: str, b: str, budget: Budget | None = None) -> bool:
    """Whether some path is covered by both (normalized) patterns; a question too hard to
    decide within QUESTION_STATES is answered True. `budget`: the request's (one of its
    own when none is given)."""
    if a == b:
        return True
    known = _DECIDED.get((a, b))
    if known is not None:
        return known
    found = (budget or Budget()).ask(
        lambda spending: _meets(_compiled(a), _compiled(b), _segments_meet, spending))
    if len(_DECIDED) >= _DECIDED_MAX:
        _DECIDED.clear()
    _DECIDED[(a, b)] = found
    return found


def covers(pattern: str, path: str, budget: Budget | None = None) -> bool:
    """Whether the pattern covers this file's path: the path's characters are taken as
    they are (a file named `a*b` is not a pattern). Too hard to decide: True."""
    literal = tuple(tuple(segment) for segment in path.split("/") if segment)
    return bool(literal) and (budget or Budget()).ask(
        lambda spending: _meets(_compiled(pattern), literal, _segments_meet, spending))


def conflict(mine: PathSpec, theirs: PathSpec, budget: Budget | None = None) -> bool:
    """Whether two reservations exclude each other: they overlap and one is exclusive."""
    return (mine.exclusive or theirs.exclusive) and overlaps(mine.pattern, theirs.pattern,
                                                             budget)
