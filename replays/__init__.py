"""Recordings of the ledger's log and the machinery that replays them.

- `format`: the versioned JSON Lines recording (see `replays/README.md`);
- `commands`: which command caused each event, and running commands again;
- `recording`: export a log (or part of it) to a recording, import one into a fresh store;
- `rerun`: re-execution with a virtual clock and the recorded ids, checked byte for byte;
- `explore`: other interleavings of the same sessions' commands, and their outcomes;
- `render`: the merged timeline in a terminal, as JSON and as an HTML page;
- `fixture`, `demo`: the seed's plan and the two-agent race.
"""

# Mapped in as planledger.replays (see planledger/__init__.py), and imported only so.
if __name__ != "planledger.replays":
    raise ImportError(f"import this folder as planledger.replays, not as {__name__}")

