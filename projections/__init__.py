"""planledger's read side: read models built by folding the event log.

- `readmodel.ReadModel` is the live model. It answers ready, blocked, holders, progress,
  step history and "as of" questions, and it is the ledger's `CandidateView`. It tracks
  its log position, saves checkpoints and lets a writer read its own writes.
- `view.LedgerView` holds the state and its indexes, folded with the domain's
  `evolve_*` functions. `index.PlanIndex` sorts one plan's steps by what the claim rule
  says of them.
- `queries` and `queryable` ask the questions of a view at a moment; `results` holds the
  answers.
- `history` reads a step's events from the log; `as_of` rebuilds the state at a past
  time or position.
- `checkpoints` saves the model's state together with its tracked position, in one
  transaction. It holds the port and the in-process recorder; the SQLite and PostgreSQL
  recorders are adapters in infra/.
- `follower` tails what other processes append (`PollingFollower`). A model given a
  `tail`, such as PostgreSQL's LISTEN/NOTIFY in infra/, starts that instead. `log` pages
  through the log and decodes it.
- `timeline` builds merged timelines of plans or sessions, with a lane per session.
"""

# Mapped in as planledger.projections (see planledger/__init__.py), and imported only so.
if __name__ != "planledger.projections":
    raise ImportError(f"import this folder as planledger.projections, not as {__name__}")

