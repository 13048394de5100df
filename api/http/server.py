"""The uvicorn server `planledger serve` runs, and how it stops.

SIGTERM or Ctrl-C (SIGINT) stops it gracefully: it stops accepting connections, ends every
waiting claim-next at once with the answer its deadline would have had (`all_held`, or a
step freed meanwhile), lets the requests in flight finish, and then the app's shutdown
saves the read model's checkpoint (api.cli.serve). Requests still running after
SHUTDOWN_SECONDS (a console or MCP stream that never ends by itself) are cancelled, so a
stop never hangs. The process then exits 0, as a service manager expects of a requested
stop; uvicorn's own server would raise the signal again and die of it.

A second Ctrl-C forces the exit at once, as with uvicorn.
"""

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import uvicorn

SHUTDOWN_SECONDS = 10
# An idle connection is closed after this long. It must outlast the clients' own idle limit
# (httpx's, which the MCP SDK uses, and Node's: 5 s): were both 5 s, a client sending on a
# connection just as the server closed it got a read error, on a request never answered.
KEEP_ALIVE_SECONDS = 20
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class LedgerServer(uvicorn.Server):
    """uvicorn's server, which calls `stopping` as a stop is asked for, and leaves the
    process to exit normally once it has stopped."""

    def __init__(self, config: uvicorn.Config, stopping: Callable[[], None]) -> None:
        super().__init__(config)
        self._stopping = stopping

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        self._stopping()

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        # As uvicorn's, without raising the signals again afterwards.
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
