"""Evidence on a completion: what the holder says shows the work is done.

A completion may carry the commits that did the work (`commits`, each a sha, and the
`branch` they are on), a change request (`pr`, an http(s) URL) and the checks that ran
(`checks`: each a name, a result `pass` or `fail`, the command that ran it and a short
summary). The ledger cannot run the checks itself; it keeps what the holder reported in
the completion's event, so an auditor reads it beside who held the step and when.

Evidence is bounded like every input: counts, sizes, the shape of a sha, a URL and a
branch name. A failed check does not refuse a completion, unless the step's plan
requires every check to pass (`PlanState.require_checks_pass`): `decide_complete` asks
`first_failed`.
"""

import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from planledger.ledger.domain import errors
from planledger.ledger.domain.plans import MAX_BODY, check_line, check_text

CheckResult = Literal["pass", "fail"]
CHECK_RESULTS: tuple[CheckResult, ...] = ("pass", "fail")

MAX_COMMITS = 50
MAX_CHECKS = 50
MAX_CHECK_NAME = 100
MAX_CHECK_COMMAND = 1_000
MAX_CHECK_SUMMARY = 1_000
MAX_PR = 2_000  # characters of the change request's URL
MAX_BRANCH = 255  # characters: git's own limit on a ref name's component is the file system's
# All the evidence's texts together: as much as one note, so no completion's event grows
# past what a note may add.
MAX_EVIDENCE_CHARACTERS = MAX_BODY

SHORT_SHA = 7  # how many of a sha's digits people are shown, as `git log --oneline`
SHA = re.compile(r"[0-9a-f]{7,64}")  # abbreviated (7) to SHA-256 (64), lower case once read
# What `git check-ref-format` refuses anywhere in a name: control characters, space, DEL,
# ~ ^ : ? * [ \, a run of dots, a run of slashes, and "@{".
_NOT_IN_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|//|@\{")
# The bidirectional controls, which show a text's characters in another order than they
# are stored: a command or summary shows on the line of its check's result.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True)
class Check:
    """One check the holder ran, as it reports it."""

    name: str
    result: CheckResult
    command: str | None = None
    summary: str | None = None

    @property
    def passed(self) -> bool:
        return self.result == "pass"


@dataclass(frozen=True)
class Evidence:
    """What a completion carries to show the work: commits (and their branch), a change
    request, checks. A frozen dataclass, so the door's pasted-credential scan
    (api.pasted_credentials) reads every text in it."""

    commits: tuple[str, ...] = ()
    branch: str | None = None
    pr: str | None = None
    checks: tuple[Check, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.commits or self.branch or self.pr or self.checks)

    def first_failed(self) -> Check | None:
        return next((c for c in self.checks if not c.passed), None)

    def described(self) -> str:
        """The evidence in one line for people (timelines, a step's history): commits
        shortened, the change request, each check with its result."""
        parts = []
        if self.commits:
            shas = ", ".join(sha[:SHORT_SHA] for sha in self.commits)
            count = len(self.commits)
            parts.append(f"{count} commit{'s' * (count != 1)} ({shas})")
        if self.branch:
            parts.append(f"on {self.branch}" if not parts else f"{parts.pop()} on {self.branch}")
        if self.pr:
            parts.append(self.pr)
        if self.checks:
            parts.append("checks: " + ", ".join(f"{c.name} {c.result}" for c in self.checks))
        return "; ".join(parts)

    def as_record(self) -> dict[str, Any]:
        """How events, requests and answers carry it (JSON), every key always present."""
        return {"commits": list(self.commits), "branch": self.branch, "pr": self.pr,
                "checks": [{"name": c.name, "result": c.result, "command": c.command,
                            "summary": c.summary} for c in self.checks]}

    @staticmethod
    def of_record(record: object) -> "Evidence":
        """Evidence from its JSON record (an event, a recording, a request the command line
        made); a record of the wrong shape is InvalidInput naming where."""
        if not isinstance(record, dict):
            raise errors.InvalidInput("evidence", "is not an object of commits, branch, pr "
                                                  "and checks")
        unknown = sorted(set(record) - {"commits", "branch", "pr", "checks"})
        if unknown:
            raise errors.InvalidInput("evidence", f"has no field {unknown[0][:40]!r}")
        commits = _listed("evidence.commits", record.get("commits"), MAX_COMMITS)
        checks = _listed("evidence.checks", record.get("checks"), MAX_CHECKS)
        return Evidence(tuple(commits), record.get("branch"), record.get("pr"),
                        tuple(_check_of(f"evidence.checks[{i}]", c)
                              for i, c in enumerate(checks)))


def _listed(field: str, value: object, limit: int) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise errors.InvalidInput(field, "is not a list")
    if len(value) > limit:
        raise errors.InvalidInput(field, f"has {len(value)}; the limit is {limit}")
    return list(value)


def _check_of(field: str, record: object) -> Check:
    if not isinstance(record, dict):
        raise errors.InvalidInput(field, "is not an object of name, result, command and "
                                         "summary")
    unknown = sorted(set(record) - {"name", "result", "command", "summary"})
    if unknown:
        raise errors.InvalidInput(field, f"has no field {unknown[0][:40]!r}")
    return Check(record.get("name"), record.get("result"),  # type: ignore[arg-type]
                 record.get("command"), record.get("summary"))


def check_evidence(evidence: Evidence | None) -> Evidence | None:
    """The evidence as the ledger keeps it (shas in lower case, each once), or None when it
    says nothing; InvalidInput naming the field (`evidence.checks[2].result`) otherwise."""
    if evidence is None or evidence.empty:
        return None
    commits = _listed("evidence.commits", evidence.commits, MAX_COMMITS)
    checks = _listed("evidence.checks", evidence.checks, MAX_CHECKS)
    kept = Evidence(
        tuple(dict.fromkeys(check_sha(f"evidence.commits[{i}]", s)
                            for i, s in enumerate(commits))),
        None if evidence.branch is None else check_branch(evidence.branch),
        None if evidence.pr is None else check_pr(evidence.pr),
        tuple(_checked(f"evidence.checks[{i}]", c) for i, c in enumerate(checks)))
    size = sum(len(t) for t in _texts(kept))
    if size > MAX_EVIDENCE_CHARACTERS:
        raise errors.InvalidInput("evidence", f"is {size} characters in all; the limit is "
                                              f"{MAX_EVIDENCE_CHARACTERS}")
    return kept


def _texts(evidence: Evidence) -> list[str]:
    texts = [*evidence.commits, evidence.branch or "", evidence.pr or ""]
    for check in evidence.checks:
        texts += [check.name, check.command or "", check.summary or ""]
    return texts


def check_sha(field: str, sha: object) -> str:
    """A commit's sha: 7 to 64 hex digits (abbreviated, SHA-1 or SHA-256), in lower case."""
    if not isinstance(sha, str) or not SHA.fullmatch(sha.lower()):
        shown = repr(sha[:80]) if isinstance(sha, str) else type(sha).__name__
        raise errors.InvalidInput(field, f"{shown} is not a commit sha (7 to 64 hex digits)")
    return sha.lower()


def check_branch(branch: object) -> str:
    """A branch as git names one (`git check-ref-format`'s rules, no more): `main`,
    `feature/evidence`, `refs/heads/x`."""
    field = "evidence.branch"
    if not isinstance(branch, str) or not branch:
        raise errors.InvalidInput(field, "must be a branch name")
    if len(branch) > MAX_BRANCH:
        raise errors.InvalidInput(field, f"is {len(branch)} characters; the limit is "
                                         f"{MAX_BRANCH}")
    # Shown on one line of a timeline: no C1 control, line separator or bidirectional
    # control either, which git takes (any byte past ASCII) and a title may not hold.
    check_line(field, branch, MAX_BRANCH, required=True)
    if (_NOT_IN_REF.search(branch) or branch.startswith(("-", "/")) or branch == "@"
            or branch.endswith(("/", ".", ".lock"))
            or any(part.startswith(".") or part.endswith(".lock")
                   for part in branch.split("/"))):
        raise errors.InvalidInput(field, f"{branch[:80]!r} is not a git branch name")
    return branch


def check_pr(pr: object) -> str:
    """A change request's address: an http or https URL with a host, and no user or
    password before it."""
    field = "evidence.pr"
    if not isinstance(pr, str) or not pr:
        raise errors.InvalidInput(field, "must be an http(s) URL")
    if len(pr) > MAX_PR:
        raise errors.InvalidInput(field, f"is {len(pr)} characters; the limit is {MAX_PR}")
    if re.search(r"[\x00-\x20\x7f-\x9f]", pr):
        raise errors.InvalidInput(field, "holds spaces or control characters; give the URL "
                                         "as a browser shows it, encoded")
    check_line(field, pr, MAX_PR, required=True)
    try:
        parts = urlsplit(pr)
        host = parts.hostname
    except ValueError:
        host = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise errors.InvalidInput(field, f"{pr[:80]!r} is not an http(s) URL")
    if "@" in parts.netloc:
        # A user or password (a token) would stay in the append-only log for good, and
        # be shown to every reader of the timeline: refused, not shown back.
        raise errors.InvalidInput(field, "names a user or password before its host; give "
                                         "the change request's address without them")
    return pr


def _checked(field: str, check: object) -> Check:
    if not isinstance(check, Check):
        raise errors.InvalidInput(field, "is not a check")
    if not isinstance(check.name, str):
        raise errors.InvalidInput(f"{field}.name", "must be a name")
    check_line(f"{field}.name", check.name, MAX_CHECK_NAME, required=True)
    result = next((r for r in CHECK_RESULTS if r == check.result), None)
    if result is None:
        shown = repr(check.result[:40]) if isinstance(check.result, str) else "nothing"
        raise errors.InvalidInput(f"{field}.result", f"is {shown}; a check's result is pass "
                                                     "or fail")
    for part, value, limit in (("command", check.command, MAX_CHECK_COMMAND),
                               ("summary", check.summary, MAX_CHECK_SUMMARY)):
        if value is not None and not isinstance(value, str):
            raise errors.InvalidInput(f"{field}.{part}", "must be text")
        if value is not None:
            check_text(f"{field}.{part}", value, limit, required=False)
            if (found := _BIDI.search(value)) is not None:
                raise errors.InvalidInput(f"{field}.{part}", f"holds U+{ord(found.group()):04X}"
                                          ", a bidirectional control: it would show the "
                                          "check's line in another order than it is stored")
    return Check(check.name, result, check.command or None, check.summary or None)
