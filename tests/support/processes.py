"""OS processes for the tests that race real processes on one store.

Each process is forked from multiprocessing's fork server, which imported the ledger, the
database drivers and the test support once for the whole test session: a child starts in
milliseconds instead of paying ~0.5-1 s of CPU for those imports (spawn's), which on a
2-core machine made the 16-process races spend most of their time starting up. The
children are still separate processes forked from a single-threaded server (no lock or
connection of the test process is inherited); each opens its own store and pool after it
starts, as a spawned one does. Unlike a spawned one, a child has the environment the fork
server started with, not the test's of the moment: pass what a child needs as arguments.
"""

import multiprocessing as mp
from multiprocessing.context import ForkServerContext

# Imported once in the fork server. (The fork server is one per test session: its preload
# is the first one set, so every test asks for the same list.)
PRELOAD = [
    "planledger.api.runtime",
    "planledger.api.service",
    "planledger.ledger.application",
    "httpx",
    "pytest",
    "tests.support",
    "tests.support.postgres",
]


def processes() -> ForkServerContext:
    """The multiprocessing context the process races start their agents with."""
    context: ForkServerContext = mp.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context
