"""`planledger audit git`: hold a git repository's history against the ledger
(projections.git_audit) and print what disagrees, each finding with its commit, step and
session.

Exit codes: 0 nothing found; 1 findings (or a ledger that cannot be read, as every verb);
2 a repository that cannot be read.
"""

import json
from datetime import timedelta
from pathlib import Path

from planledger.api.cli import output
from planledger.api.cli.common import open_client, require_store
from planledger.api.cli.grammar import Values
from planledger.api.ledger_events import events_of
from planledger.infra.git_history import GitError, held, repository, walk
from planledger.ledger.domain.evidence import SHORT_SHA
from planledger.projections.claim_history import ClaimHistory, claim_history
from planledger.projections.git_audit import Report, audit

EXIT_FOUND = 1
EXIT_UNREADABLE = 2
UNTRUSTED = ("committer dates are the committer's word (anyone can set them): where the "
             "ledger's clock says otherwise by more than {bound:g} s, a commit is judged at "
             "the ledger's time and the disagreement is a finding")
NAMES = {"outside_claim": "made outside a live claim",
         "into_reservation": "into another session's reservation",
         "evidence_missing": "evidence naming a commit not in the history",
         "unknown_claim": "trailers naming no claim of the ledger",
         "clock_disagrees": "committer dates the ledger contradicts"}


def ledger_history(db: str | None, url: str | None, token: str | None) -> ClaimHistory:
    """The ledger's claims, read from the store `db` (never created here) or the server."""
    require_store(db, url)
    with open_client(db, url, token=token) as client:
        return claim_history(events_of(client))


def audit_git(v: Values) -> int:
    history = ledger_history(v["db"], v["url"], v["token"])
    bound = timedelta(seconds=v["clock_bound"])
    try:
        top = repository(Path(v["repo"]))
        walked = walk(top, v["since"])
        report = audit(walked.commits, history, lambda shas: held(top, shas), bound,
                       walked.more)
    except GitError as error:
        output.line(f"planledger audit git: {error}", stderr=True)
        return EXIT_UNREADABLE
    if v["json"]:
        output.echo(json.dumps({"repo": str(top), "dates": UNTRUSTED.format(
            bound=bound.total_seconds()), **report.to_dict()}, indent=2, ensure_ascii=False))
    else:
        _show(report, top)
    return EXIT_FOUND if report.findings else 0


def _show(report: Report, top: Path) -> None:
    more = " (the newest only: pass --since to read the rest)" if report.more else ""
    output.line(f"read {report.commits_read} commits of {top}{more}")
    output.line(f"note: {UNTRUSTED.format(bound=report.bound_seconds)}")
    if report.findings:
        rows = [(f.kind, f.commit[:SHORT_SHA], f.step or "", f.session or "", f.text)
                for f in report.findings]
        output.table(("finding", "commit", "step", "session", "what"), rows, "findings",
                     fold=(4,))
    counted = ", ".join(f"{n} {NAMES[k]}" for k, n in report.counts.items() if n)
    output.line(f"{len(report.findings)} findings: {counted}" if report.findings
                else "no findings: every commit agrees with the ledger")
