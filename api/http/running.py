"""Where a route runs a short ledger command: on the event loop itself when the store can
take it at once, on the thread pool otherwise.

On the embedded SQLite store a command is a fraction of a millisecond of work under one
write lock, so commands run one at a time whatever thread runs them. Handing each to a
worker thread and back, with eight such threads taking turns at the interpreter lock,
cost more than the command itself (figures: bench/findings.md). When the write lock is
held elsewhere (another process, a longer write on the pool), the command raises
WouldWait before it has written anything. It then runs again on the pool, where waiting
stalls no other request.
Commands that read the read model (claim-next, ready) or may run long (a plan) stay on the
pool: a first read can fold the whole log.
"""

from collections.abc import Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool

from planledger.api.service import Service
from planledger.ledger.store import WouldWait

T = TypeVar("T")


async def run_command(service: Service, command: Callable[[], T]) -> T:
    try:
        with service.runtime.store.without_waiting():
            return command()
    except WouldWait:
        return await run_in_threadpool(command)
