"""planledger's read side: read models folded from the event log.

- `readmodel.ReadModel`: the live model (also the ledger's `CandidateView`): ready, blocked,
  holders, progress, step history, "as of"; positioned, checkpointed, read-your-writes.
- `view.LedgerView`: the state and its indexes, folded with the domain's `evolve_*`;
  `index.PlanIndex`: one plan's steps by what the claim rule says of them.
- `queries` / `queryable`: the questions, asked of a view at a moment; `results`: answers.
- `history`: a step's events from the log, and `as_of` a past time or position.
- `checkpoints`: the model's state saved with its tracked position, in one transaction
  (the port, and the in-process recorder; SQLite's and PostgreSQL's are adapters in infra/).
- `follower`: tailing other processes' appends (`PollingFollower`; a model given a `tail`,
  PostgreSQL's LISTEN/NOTIFY in infra/, starts that instead). `log`: paging and decoding
  the log.
- `timeline`: merged timelines of plans or sessions, a lane per session.
"""

# Mapped in as planledger.projections (see planledger/__init__.py), and imported only so.
if __name__ != "planledger.projections":
    raise ImportError(f"import this folder as planledger.projections, not as {__name__}")

