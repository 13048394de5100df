"""A session's git commits in its lane of the timeline (`planledger replay timeline
--repo DIR`): each commit whose Planledger-Session trailer names one of the timeline's
sessions (the trailers the commit guard's hooks write), shown at its committer date
with the claims its trailers name.

A committer date is the committer's word (it can be set by hand): a commit sits where
its date puts it, and `planledger audit git` is the command that holds those dates, and
the claims, against the ledger.
"""

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from planledger.infra.git_history import walk
from planledger.ledger.domain.evidence import SHORT_SHA
from planledger.projections.git_audit import Commit, named_by
from planledger.projections.timeline_entries import Entry, Timeline


def with_commits(timeline: Timeline, commits: Sequence[Commit]) -> Timeline:
    """The timeline with a `commit` entry in its session's lane for each commit of one of
    its sessions, placed after the last entry at or before the commit's date. A commit is
    not in the log: its entry carries the position of the entry before it."""
    lanes = {lane.session_id for lane in timeline.lanes if lane.session_id is not None}
    titles = {e.step_id: (e.step_number, e.step_title) for e in timeline.entries
              if e.step_id is not None}
    marks = sorted((entry for commit in commits
                    if (entry := _entry(commit, lanes, titles)) is not None),
                   key=lambda e: e.at)
    merged: list[Entry] = []
    waiting = list(reversed(marks))
    for entry in timeline.entries:
        while waiting and waiting[-1].at < entry.at:
            merged.append(replace(waiting.pop(), position=merged[-1].position
                                  if merged else 0))
        merged.append(entry)
    last = merged[-1].position if merged else 0
    merged += [replace(mark, position=last) for mark in reversed(waiting)]
    return replace(timeline, entries=tuple(merged))


def _entry(commit: Commit, lanes: set[str],
           titles: dict[str, tuple[int | None, str | None]]) -> Entry | None:
    named = named_by(commit.trailers)
    if named is None or named.session not in lanes or commit.committed_at is None:
        return None
    under = ", ".join(f"{ref} (fence {fence})" for ref, _, fence in named.claims)
    text = f"commit {commit.sha[:SHORT_SHA]}" + (f" under {under}" if under else "")
    if not named.claims:
        return Entry(0, commit.committed_at, named.session, "commit", text)
    ref, step_id, fence = named.claims[0]
    number, title = titles.get(step_id, (None, None))
    return Entry(0, commit.committed_at, named.session, "commit", text,
                 plan=ref.partition("#")[0] or None, step_id=step_id, step_number=number,
                 step_title=title, fence=fence)


def commits_of(repo: Path) -> list[Commit]:
    """The repository's commits (infra.git_history.walk: at most its MAX_COMMITS)."""
    return walk(repo).commits
