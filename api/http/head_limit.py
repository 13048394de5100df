"""The HTTP protocol `planledger serve` speaks: uvicorn's httptools protocol (its fastest,
as FastAPI advises for production), holding at most MAX_HEAD_BYTES of a request's line and
headers while they are still arriving.

httptools buffers an unfinished head without a bound, so a client could send headers for
ever and hold the server's memory; h11 (uvicorn's other protocol) refuses that past its
`h11_max_incomplete_event_size`. Here the same rule: a head still unfinished after more
than MAX_HEAD_BYTES have arrived is answered 400 and the connection closed. A complete
head that arrives within one read is parsed as h11 would parse it.

The refusal closes gently: the 400 is sent and the server's side shut for writing, and
what the client still sends is read and dropped until it closes its side (or
LINGER_SECONDS pass). Closed at once, with the client's bytes still arriving, the socket
answered them with a reset, which can throw the 400 away before the client reads it.

A head must also arrive whole within HEAD_SECONDS of its first byte (of the connection's
opening, for the first): uvicorn times out only the idle wait between requests, so a socket
opened and left silent, or fed a byte now and then, held one of `max_connections`
(uvicorn's limit_concurrency) for ever, and a few hundred of them locked every client out
with 503 without a request or a token. Such a connection is closed.
"""

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# h11's own default, named here so that a change of uvicorn's or h11's does not change ours.
MAX_HEAD_BYTES = 16 * 1024
REFUSAL = "Request line and headers too large."
LINGER_SECONDS = 5.0
# A head's line and headers take well under a second to send; a client's idle limit, not
# ours, bounds the wait before a request (api.http.server.KEEP_ALIVE_SECONDS).
HEAD_SECONDS = 20.0


class HeadLimitedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing an unfinished head past MAX_HEAD_BYTES."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unfinished_head: int | None = 0  # bytes of the head arriving; None: in a body
        self._refused = False
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._time_the_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timing_the_head()
        super().connection_lost(exc)

    def _time_the_head(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_too_slow)

    def _stop_timing_the_head(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if not self._refused and not self.transport.is_closing():
            self.logger.debug("A request's head did not arrive within %s s.", HEAD_SECONDS)
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # read and dropped until the client closes (see the module's words)
        if self._unfinished_head is not None:
            self._unfinished_head += len(data)
            self._time_the_head()  # from the head's first byte
        super().data_received(data)
        if self._unfinished_head is not None and self._unfinished_head > MAX_HEAD_BYTES:
            self._refuse()

    def _refuse(self) -> None:
        self._refused = True
        self.logger.warning(REFUSAL)
        body = REFUSAL.encode()
        lines = [b"HTTP/1.1 400 Bad Request",
                 *(name + b": " + value for name, value in self.server_state.default_headers),
                 b"content-type: text/plain; charset=utf-8",
                 b"content-length: " + str(len(body)).encode(), b"connection: close"]
        transport = self.transport
        transport.write(b"\r\n".join(lines) + b"\r\n\r\n" + body)
        if transport.can_write_eof():
            transport.write_eof()
            asyncio.get_running_loop().call_later(LINGER_SECONDS, transport.close)
        else:
            transport.close()

    def on_headers_complete(self) -> None:
        self._unfinished_head = None
        self._stop_timing_the_head()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._unfinished_head = 0  # what follows on this connection is the next head
        super().on_message_complete()
