"""Live updates: one log follower per app feeds the read model, and every console stream
wakes when the position it reached moves.

The follower is the read side's own (`projections.follower.follow`: LISTEN/NOTIFY on
PostgreSQL, a short poll on SQLite), so appends made by other processes or replicas reach
the console too. It runs only while some console is connected.
"""

import asyncio
import logging

import anyio
from anyio import to_thread

from planledger.projections.follower import Follower, follow
from planledger.projections.readmodel import ReadModel

log = logging.getLogger("planledger.console")
WAIT_SECONDS = 0.5  # how long the watching thread blocks before looking again


class LogWatch:
    """The log position the app's read model has reached, as something to await."""

    def __init__(self, reads: ReadModel) -> None:
        self._reads = reads
        self._follower: Follower | None = None
        self._task: asyncio.Task[None] | None = None
        self._streams = 0
        self._lock = asyncio.Lock()
        self._moved = asyncio.Event()
        self.position = 0

    async def join(self) -> int:
        """A stream starts watching (the first one starts the follower); returns the
        position reached."""
        async with self._lock:
            self._streams += 1
            if self._follower is None:
                self._follower = await to_thread.run_sync(follow, self._reads)
                self.position = max(self.position, self._follower.position)
                self._task = asyncio.get_running_loop().create_task(
                    self._watch(self._follower))
            return self.position

    async def leave(self) -> None:
        """A stream stops watching (the last one stops the follower)."""
        async with self._lock:
            self._streams -= 1
            if self._streams > 0 or self._follower is None:
                return
            follower, self._follower = self._follower, None
            if self._task is not None:
                self._task.cancel()
                self._task = None
            await to_thread.run_sync(follower.stop)

    async def moved_past(self, position: int, timeout: float) -> bool:
        """Wait until the log is past `position`; False after `timeout` seconds."""
        with anyio.move_on_after(timeout):
            while self.position <= position:
                moved = self._moved
                await moved.wait()
        return self.position > position

    async def _watch(self, follower: Follower) -> None:
        while True:
            try:
                await to_thread.run_sync(follower.wait_for, self.position + 1, WAIT_SECONDS,
                                         abandon_on_cancel=True)
            except Exception:  # never leave the streams without a watcher: look again
                log.exception("watching the log failed")
                await asyncio.sleep(WAIT_SECONDS)
            reached = follower.position
            if reached > self.position:
                self.position = reached
                moved, self._moved = self._moved, asyncio.Event()
                moved.set()
