"""Path patterns: what is accepted, and the overlap rule against a brute-force reference.

The reference knows nothing of the automaton search: it lists every path of a small
universe and asks, with the standard library's `fnmatchcase` per segment and plain
recursion for `**`, whether some path is covered (matched, or lies beneath a match) by
both patterns (a pattern ending in a plain name also covers what lies beneath its
matches). Patterns of at most two segments of at most two tokens over {a, b, ?, *}
meet, if at all, on a path of at most three segments of at most three letters from {a, b}
(each step of a shortest witness uses up a token of one pattern or the other), so the
universe below decides them completely.
"""

import itertools
from fnmatch import fnmatchcase
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planledger.ledger.domain import errors
from planledger.ledger.domain.paths import (
    MAX_PATHS,
    QUESTION_STATES,
    REQUEST_STATES,
    Budget,
    PathSpec,
    check_file,
    check_paths,
    check_pattern,
    conflict,
    covers,
    merge,
    overlaps,
    restated,
    wide_patterns,
)

# --- accepted and refused ----------------------------------------------------------------


@pytest.mark.parametrize(("given_", "normal"), [
    ("internal/auth/", "internal/auth/**"),
    ("internal/auth/**/", "internal/auth/**"),
    ("./internal//auth/./x.go", "internal/auth/x.go"),
    ("internal\\auth\\*.go", "internal/auth/*.go"),
    ("a/**/**/b", "a/**/b"),
    ("a***b", "a*b"),
    ("**", "**"),
    ("app/[id]/page.tsx", "app/[id]/page.tsx"),
    ("a:b/c", "a:b/c"),
])
def test_patterns_are_normalized(given_: str, normal: str) -> None:
    assert check_pattern(given_) == normal


@pytest.mark.parametrize(("given_", "why"), [
    ("", "empty"),
    ("   ", "empty"),
    ("/etc/passwd", "absolute"),
    ("\\abs", "absolute"),
    ("C:/x", "absolute"),
    ("c:", "absolute"),
    ("../x", "'..'"),
    ("a/../b", "'..'"),
    (".", "names no path"),
    ("./", "names no path"),
    ("a\nb", "control"),
    ("a/" + "b" * 256, "segment longer"),
    ("/".join(["x"] * 600), "limit is"),
    ("*/" * 17 + "x", "more than 16"),
])
def test_bad_patterns_are_refused_naming_the_field(given_: str, why: str) -> None:
    with pytest.raises(errors.InvalidInput) as refused:
        check_pattern(given_, "paths[2]")
    assert refused.value.field == "paths[2]"
    assert why in str(refused.value)


def test_a_declaration_is_deduplicated_and_exclusive_wins() -> None:
    checked = check_paths([PathSpec("./a", "shared"), PathSpec("b"), PathSpec("a", "exclusive")])
    assert checked == (PathSpec("a", "exclusive"), PathSpec("b"))
    assert merge([PathSpec("x", "shared")], [PathSpec("y", "shared")]) == (
        PathSpec("x", "shared"), PathSpec("y", "shared"))


def test_too_many_paths_or_an_unknown_mode_are_refused() -> None:
    with pytest.raises(errors.InvalidInput, match="limit is"):
        check_paths([PathSpec(f"f{i}") for i in range(MAX_PATHS + 1)])
    with pytest.raises(errors.InvalidInput, match="mode"):
        check_paths([PathSpec("a", "owned")])  # type: ignore[arg-type]


# --- the rule, case by case ----------------------------------------------------------------


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("internal/auth/**", "internal/auth/token.go", True),
    ("internal/auth", "internal/auth/token.go", True),  # a directory covers its contents
    ("internal/auth", "internal/authz/x.go", False),
    ("internal/*/token.go", "internal/auth/*.go", True),
    ("internal/*.go", "internal/auth/x.go", False),  # `*` stays within its segment
    ("**/*.go", "docs/readme.md", True),  # a plain name may be a directory
    ("**/*.go", "docs/*.md", False),
    ("internal/auth/*", "internal/auth/x/y.go", False),  # `*` ends at its segment
    ("internal/auth/*/", "internal/auth/x/y.go", True),
    ("**/*.go", "docs/x.go", True),
    ("**/test_*.py", "tests/unit/**", True),
    ("a/**/b", "a/b", True),  # `**` matches no segment too
    ("a/**/b/c", "a/x/y/b/*", True),
    ("a?c", "abc", True),
    ("a?c", "ac", False),  # `?` is exactly one character
    ("*.md", "README.md", True),
    ("*.md", ".github", False),
    ("*", ".env", True),  # `*` matches dotfiles
    ("Auth/x", "auth/x", False),  # case-sensitive
    ("app/[id]", "app/i", False),  # brackets are literal
    ("app/[id]", "app/[id]/page.tsx", True),
    ("x.go", "*.go/y", True),  # what lies beneath x.go (were it a directory)
    ("*.go", "x.go/y", False),  # a wildcard name covers only what it matches
    ("*.go", "y/x.go", False),
])
def test_overlap_cases(a: str, b: str, expected: bool) -> None:
    a, b = check_pattern(a), check_pattern(b)
    assert overlaps(a, b) is expected
    assert overlaps(b, a) is expected


def test_shared_reservations_exclude_only_exclusive_ones() -> None:
    shared, exclusive = PathSpec("docs/**", "shared"), PathSpec("docs/a.md")
    assert not conflict(shared, PathSpec("docs/*.md", "shared"))
    assert conflict(shared, exclusive) and conflict(exclusive, shared)
    assert not conflict(exclusive, PathSpec("src/**"))


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("internal/auth/**", "internal/auth/token.go", True),
    ("internal/auth", "internal/auth", True),
    ("internal/auth", "internal/authz.go", False),
    ("*.go", "cmd/main.go", False),
    ("cmd/*", "cmd/sub/main.go", False),
    ("cmd/", "cmd/sub/main.go", True),
    ("**/*.go", "cmd/main.go", True),
    ("a?b", "a*b", True),
    ("a*b", "a?b", True),
    ("a/b", "a/*", False),  # a file named `*` is not a pattern
])
def test_a_pattern_covers_a_file_path_taken_literally(pattern: str, path: str,
                                                      expected: bool) -> None:
    assert covers(check_pattern(pattern), path) is expected


def test_long_patterns_are_decided_quickly() -> None:
    worst = "/".join(["*a*a*a*a*a*a*a*" + "a" * 200] * 2)
    cases = [("/".join(["*a*b*c"] * 5) + "/**", "**/" + "/".join(["?" * 40 + "*"] * 5), True),
             ("x/*" + "a" * 250, "x/" + "b" * 250 + "*", True),
             ("x/" + "a" * 250 + "*", "x/" + "b" * 250 + "*", False),
             ("/".join(["*a*a*a*a*a*a*a*a"] * 2), worst, True)]
    # Work, not time, is what is bounded: the positions visited, counted by the budget.
    budget = Budget()
    for a, b, expected in cases:
        assert overlaps(check_pattern(a), check_pattern(b), budget) is expected
    assert REQUEST_STATES - budget.left < len(cases) * QUESTION_STATES // 4


# --- against the brute-force reference -------------------------------------------------------

LETTERS = "ab"
NAMES = ["".join(p) for n in (1, 2, 3) for p in itertools.product(LETTERS, repeat=n)]
UNIVERSE = [tuple(p) for n in (1, 2, 3) for p in itertools.product(NAMES, repeat=n)]


def _matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_matches(rest, path[k:]) for k in range(len(path) + 1))
    return bool(path) and fnmatchcase(path[0], head) and _matches(rest, path[1:])


@cache  # a few hundred patterns can be drawn: each is listed once
def _covered(pattern: str) -> frozenset[tuple[str, ...]]:
    parts = tuple(pattern.split("/"))
    if "*" in parts[-1] or "?" in parts[-1]:
        return frozenset(p for p in UNIVERSE if _matches(parts, p))
    return frozenset(p for p in UNIVERSE
                     if any(_matches(parts, p[:k]) for k in range(1, len(p) + 1)))


segments = st.one_of(
    st.just("**"),
    st.lists(st.sampled_from(["a", "b", "?", "*"]), min_size=1, max_size=2).map("".join),
)
patterns = st.lists(segments, min_size=1, max_size=2).map("/".join).map(check_pattern)


@settings(max_examples=300, deadline=None)
@given(patterns, patterns)
def test_overlap_agrees_with_brute_force(a: str, b: str) -> None:
    assert overlaps(a, b) == bool(_covered(a) & _covered(b))


@settings(max_examples=300, deadline=None)
@given(patterns, st.sampled_from(UNIVERSE))
def test_covers_agrees_with_brute_force(pattern: str, path: tuple[str, ...]) -> None:
    assert covers(pattern, "/".join(path)) == (path in _covered(pattern))


@pytest.mark.parametrize(("given_", "normal"), [
    ("./a//b\\c.go", "a/b/c.go"), ("a*b/[x]", "a*b/[x]"), ("dir/", "dir")])
def test_file_paths_are_normalized_and_keep_their_characters(given_: str, normal: str) -> None:
    assert check_file(given_) == normal


@pytest.mark.parametrize("given_", ["", "/etc/passwd", "C:/x", "a/../b", "..", ".", "a\tb"])
def test_bad_file_paths_are_refused(given_: str) -> None:
    with pytest.raises(errors.InvalidInput):
        check_file(given_)


@pytest.mark.parametrize(("pattern", "reach"), [
    ("**", "the whole repository"), ("**/*", "the whole repository"),
    ("./**/**", "the whole repository"), ("*/**", "the whole repository"),
    ("*", "every file and directory name at the repository root"),
    ("*/*", "every path 2 segments deep"),
])
def test_patterns_made_only_of_wildcards_are_warned_of(pattern: str, reach: str) -> None:
    """MCP Agent Mail flags `*`, `**` and `**/*`: they lock (nearly) everything."""
    (said,) = wide_patterns([PathSpec(check_pattern(pattern))])
    assert said.startswith(f'"{check_pattern(pattern)}" reserves {reach}: ')


@pytest.mark.parametrize("pattern", ["src/**", "**/*.py", "*.md", "a*/**", "internal/auth"])
def test_patterns_naming_anything_are_not_warned_of(pattern: str) -> None:
    assert wide_patterns([PathSpec(check_pattern(pattern))]) == []


def test_a_heartbeat_restating_a_pattern_takes_the_mode_it_gives() -> None:
    held = (PathSpec("src/**"), PathSpec("docs/**", "shared"))
    renewal = (PathSpec("src/**", "shared"), PathSpec("go.mod"))
    assert restated(held, renewal) == (PathSpec("src/**", "shared"), PathSpec("docs/**", "shared"),
                                     PathSpec("go.mod"))
