"""The trailers the commit guard's `prepare-commit-msg` hook adds to a commit made by a
session that holds a live claim, so the history says which claim each commit was made
under (`planledger audit git` holds them against the ledger):

    Planledger-Step: auth#2 01KXMRCX…
    Planledger-Fence: 3
    Planledger-Session: 01KXMR9Q…

One Step and Fence pair per live claim, in that order (a session holding two claims adds
two pairs; each Fence belongs to the Step before it), then the session once.
git itself writes them (`git interpret-trailers`), so they sit where git and its tools
read trailers. A pair or session the message already carries (an amend, a message reused)
is not added again. Nothing here ever refuses a commit: the hook's command turns any
failure into one line on stderr (api.cli.guard.trailers).
"""

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from planledger.api.client import Client
from planledger.projections.git_audit import FENCE_TRAILER as FENCE
from planledger.projections.git_audit import SESSION_TRAILER as SESSION
from planledger.projections.git_audit import STEP_TRAILER as STEP
from planledger.projections.git_audit import paired

TIMEOUT = 20.0  # seconds git may take over a message


class TrailerError(Exception):
    """The trailers could not be read or written; says why."""


@dataclass(frozen=True)
class HeldClaim:
    """A live claim as a trailer names it: `plan#number step_id`, and its fence."""

    plan: str
    number: int
    step_id: str
    fence: int

    @property
    def step_value(self) -> str:
        return f"{self.plan}#{self.number} {self.step_id}"


def held_claims(client: Client, session: str) -> list[HeldClaim]:
    """The live claims of `session`, each with its step's number in its plan."""
    holds = client.session(session).holds
    return [HeldClaim(h.plan, client.step(h.step_id).position + 1, h.step_id, h.fence)
            for h in holds]


def to_add(existing: Sequence[tuple[str, str]], claims: Sequence[HeldClaim],
           session: str) -> list[tuple[str, str]]:
    """The trailers a message carrying `existing` still needs for `claims`."""
    pairs = set(paired(existing)[0])
    added: list[tuple[str, str]] = []
    for claim in claims:
        if (claim.step_value, str(claim.fence)) not in pairs:
            added += [(STEP, claim.step_value), (FENCE, str(claim.fence))]
    if claims and (SESSION.lower(), session) not in {(k.lower(), v) for k, v in existing}:
        added.append((SESSION, session))
    return added


def _git(repo: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True,
                              timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise TrailerError(f"git {args[0]} could not run: {error}") from None
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise TrailerError(f"git {args[0]} failed: {said[-1] if said else 'no reason'}")
    return done.stdout.decode("utf-8", "replace")


def existing_trailers(repo: Path, message: Path) -> list[tuple[str, str]]:
    """The trailers the message file carries now, as git reads them."""
    parsed = _git(repo, "interpret-trailers", "--parse", "--", str(message))
    found = []
    for line in parsed.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            found.append((key.strip(), value.strip()))
    return found


def has_text(message: Path) -> bool:
    """Whether the message says anything yet: a line that is not blank, a comment, or
    below the scissors line of `git commit -v`. An editor's message is still empty when
    `prepare-commit-msg` runs; the `commit-msg` hook adds the trailers once it is written,
    and an empty one still aborts the commit, as git means it to."""
    for line in message.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("#") and ">8" in line:
            return False
        if line.strip() and not line.startswith("#"):
            return True
    return False


def add_trailers(repo: Path, message: Path, claims: Sequence[HeldClaim],
                 session: str) -> list[tuple[str, str]]:
    """Add to the message file the trailers it lacks for `claims`; what was added."""
    added = to_add(existing_trailers(repo, message), claims, session)
    if added:
        named = [f"--trailer={key}: {value}" for key, value in added]
        _git(repo, "interpret-trailers", "--in-place", "--where", "end", "--if-exists",
             "add", "--if-missing", "add", *named, "--", str(message))
    return added
