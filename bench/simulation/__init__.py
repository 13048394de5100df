"""A deterministic simulator of agents on the real ledger (issue 20), after FoundationDB's
simulation and TigerBeetle's VOPR.

Small independent worlds, each grown from one seed: a plan or two, a few "processes" (each
the real `Ledger`, `ReadModel` and `Service` over one shared store), agents that claim,
heartbeat, complete, release, drop, claim-next, end sessions, pause past their leases and
retry with idempotency keys, review each other's work where a plan requires it (and try
to review their own, which four eyes refuses), processes that crash and restart, on a
virtual clock, with faults injected at the store boundary (`faults`). After every action
the world checks its invariants (`checks`) against an independent reference model
(`reference`). A violation names its world seed and a shrunk history (`shrink`); the same
seed replays it exactly.

    python -m planledger.bench.simulate --seed 7 --ops 1000000     # see bench/simulate.py
"""
