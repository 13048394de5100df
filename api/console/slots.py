"""Places for console streams: a server follows at most so many at once.

Every log message is built for and written to each open stream. So the number of open
streams sets how much they slow the writers (figure: bench/findings.md). A stream takes a
place before its answer begins. It gives the place back when the answer ends: at its end,
when its client leaves, or on an error. `HeldStream` is the response that does this.
"""

import threading
from typing import Any

from sse_starlette import EventSourceResponse
from starlette.types import Receive, Scope, Send

from planledger.api.errors import TooManyStreams
from planledger.api.settings import CONSOLE_STREAMS_SETTING


class StreamSlots:
    """`StreamSlots(cap)`: at most `cap` places held at once."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.held = 0
        self._changed = threading.Condition()

    def take(self) -> None:
        """Hold a place, or raise TooManyStreams (503) when all are held."""
        with self._changed:
            if self.held >= self.cap:
                raise TooManyStreams(
                    f"this server follows {self.cap} console streams, the most it is set to "
                    f"({CONSOLE_STREAMS_SETTING}); close a console or retry shortly")
            self.held += 1
            self._changed.notify_all()

    def give_back(self) -> None:
        with self._changed:
            self.held -= 1
            self._changed.notify_all()

    def wait_until_held(self, count: int, timeout: float) -> bool:
        """Block until exactly `count` places are held (tests watch the places this way, not
        by sleeping); False after `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self.held == count, timeout)


class HeldStream(EventSourceResponse):
    """An event stream that gives its place back however its answer ends (a generator's
    `finally` would not run for a stream whose client left before it began)."""

    def __init__(self, content: Any, slots: StreamSlots, **options: Any) -> None:
        super().__init__(content, **options)
        self._slots = slots

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._slots.give_back()
