"""Start-up: command-line calls and a cold `planledger mcp`, as an agent's shell and an
agent's client run them.

Each figure is a whole process (start included) next to the same interpreter starting and
doing nothing (`python -c pass`), measured alternately in the same run; medians. Agents run
these commands by the hundred and start MCP servers several at once, so what a call imports
before it does anything is paid on every call (issue 19: a `--url` call and `--help`
<= 3x a bare start, an embedded `ready` <= 5x; a cold `planledger mcp` answers
`initialize` within 0.5 s, eight started together within 1.5 s).
"""

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from planledger.bench.servers import PLANLEDGER, start_replica
from planledger.bench.timing import Figure, scratch_dir

BARE = "the same interpreter starting and doing nothing"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"}}}


def _seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    return time.perf_counter() - started


def _initialize_seconds(db: str) -> float:
    """From starting `planledger mcp` to reading its answer to `initialize`."""
    started = time.perf_counter()
    with subprocess.Popen([PLANLEDGER, "mcp", "--db", db], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        elapsed = time.perf_counter() - started
        server.stdin.close()  # end of input ends the server
        server.wait(timeout=120)
    assert answer.get("id") == 1 and "result" in answer, answer
    return elapsed


def _eight_at_once(db: str) -> float:
    """The last of eight `planledger mcp` started together to answer `initialize`."""
    with ThreadPoolExecutor(8) as pool:
        return max(pool.map(lambda _: _initialize_seconds(db), range(8)))


def _paired(rounds: int, measure: Callable[[], float]) -> tuple[float, float]:
    """Medians of `measure` and of a bare interpreter start, alternated."""
    bare, measured = [], []
    for _ in range(rounds):
        bare.append(_seconds([sys.executable, "-c", "pass"]))
        measured.append(measure())
    return statistics.median(measured) * 1000, statistics.median(bare) * 1000


def run(smoke: bool = False) -> list[Figure]:
    rounds = 1 if smoke else 9
    with scratch_dir("startup") as directory:
        db = str(directory / "ledger.sqlite")
        plan = directory / "plan.yaml"
        plan.write_text("slug: p\ntitle: P\nsteps:\n  - title: one\n  - title: two\n")
        subprocess.run([PLANLEDGER, "plan", "create", str(plan), "--db", db], check=True,
                       capture_output=True, timeout=120)
        figures = []

        def call(name: str, args: list[str], goal: float | None) -> None:
            value, bare = _paired(rounds, lambda: _seconds([PLANLEDGER, *args]))
            figures.append(Figure(name, value, "ms", BARE, bare, goal=goal,
                                  lower_is_better=True, rounds=rounds))

        call("`planledger --help`, process included", ["--help"], 3.0)
        call("`planledger plan list` on a small SQLite store, process included",
             ["plan", "list", "--db", db, "--json"], None)
        call("`planledger ready` on a small SQLite store, process included",
             ["ready", "p", "--db", db, "--json"], 5.0)
        replica = start_replica(str(directory / "served.sqlite"))
        try:
            subprocess.run([PLANLEDGER, "plan", "create", str(plan), "--url", replica.url],
                           check=True, capture_output=True, timeout=120)
            call("`planledger plan list --url` (a running server), process included",
                 ["plan", "list", "--url", replica.url, "--json"], 3.0)
            call("`planledger ready --url` (a running server), its tables for people, "
                 "process included", ["ready", "p", "--url", replica.url], 3.0)
        finally:
            replica.stop()
        for name, measure in (("cold `planledger mcp` (stdio) answering initialize",
                               lambda: _initialize_seconds(db)),
                              ("eight `planledger mcp` started together: the last "
                               "answering initialize", lambda: _eight_at_once(db))):
            value, bare = _paired(rounds if not smoke else 1, measure)
            figures.append(Figure(name, value, "ms", BARE, bare, lower_is_better=True,
                                  rounds=rounds))
    return figures
