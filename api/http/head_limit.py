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
"""

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

# h11's own default, named here so that a change of uvicorn's or h11's does not change ours.
MAX_HEAD_BYTES = 16 * 1024
REFUSAL = "Request line and headers too large."
LINGER_SECONDS = 5.0


class HeadLimitedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing an unfinished head past MAX_HEAD_BYTES."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unfinished_head: int | None = 0  # bytes of the head arriving; None: in a body
        self._refused = False

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # read and dropped until the client closes (see the module's words)
        if self._unfinished_head is not None:
            self._unfinished_head += len(data)
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
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._unfinished_head = 0  # what follows on this connection is the next head
        super().on_message_complete()
