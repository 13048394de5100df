"""The wire under `RemoteClient`: JSON requests to one server over the standard library's
`http.client`, on one kept-alive connection.

A command line call to a server (`planledger claim … --url …`) makes one or two requests;
loading httpx (its async and TLS stacks) cost more than the rest of such a call's start-up
(issue 19). What the client needs is small: a base URL, headers, a timeout per request,
query parameters, a JSON body, and every way the server can fail to answer as one error.
"""

import http.client
import json
import select
from typing import Any
from urllib.parse import urlencode, urlsplit


class NoAnswer(Exception):
    """The server did not answer: refused, timed out, or the connection was cut."""


class Answer:
    """A server's answer: its status and body."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body

    def json(self) -> Any:
        """The body as JSON (ValueError when it is not)."""
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class Connection:
    """Requests to the server at `url` (http or https, with any path prefix), sending
    `headers` with each."""

    def __init__(self, url: str, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not a server's URL: {url!r} (e.g. http://127.0.0.1:8765)")
        secure = parts.scheme == "https"
        kind = http.client.HTTPSConnection if secure else http.client.HTTPConnection
        self._connection = kind(parts.hostname, parts.port, timeout=timeout)
        self._prefix = parts.path.rstrip("/")
        self.headers: dict[str, str] = {}

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                body: Any = None, timeout: float) -> Answer:
        """Send one request and read its whole answer; NoAnswer when there is none."""
        target = self._prefix + path + (f"?{urlencode(params, doseq=True)}" if params else "")
        headers = {"Accept": "application/json", **self.headers}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self._reopen_if_closed(timeout)
        try:
            self._connection.request(method, target, body=payload, headers=headers)
            response = self._connection.getresponse()
            return Answer(response.status, response.read())
        except (OSError, http.client.HTTPException) as cut:
            self._connection.close()
            raise NoAnswer(str(cut) or type(cut).__name__) from cut

    def _reopen_if_closed(self, timeout: float) -> None:
        # A kept-alive connection the server closed while idle reads as readable (its end
        # of file): drop it before sending, so a request is never sent into a dead socket
        # (and never sent twice).
        self._connection.timeout = timeout
        sock = self._connection.sock
        if sock is None:
            return
        if select.select([sock], [], [], 0)[0]:
            self._connection.close()
        else:
            sock.settimeout(timeout)

    def close(self) -> None:
        self._connection.close()
