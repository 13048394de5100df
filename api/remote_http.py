"""The wire under `RemoteClient` and the command line's calls to a server: JSON requests
to one server over HTTP/1.1, on one kept-alive socket.

A command line call to a server (`planledger claim … --url …`) makes one or two requests,
and its start-up is most of its time: httpx (its async and TLS stacks) cost more than the
rest of such a call, and even the standard library's `http.client` loads the email
package and TLS, which costs about as much as the interpreter's own start (figure:
bench/findings.md). What a client
of our server needs is small: a base URL, headers, a timeout per request, query
parameters, a JSON body, an answer with a length or in chunks, and every way the server
can fail to answer as one error; so it is written here on a socket, TLS loaded only for
https.
"""

import json
import select
import socket
from typing import IO, Any
from urllib.parse import urlencode, urlsplit

MAX_LINE = 65_536  # a status or header line longer than this is not an answer


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})  # they change nothing: sent again


class NoAnswer(Exception):
    """The server did not answer: refused, timed out, or the connection was cut."""


class _Unanswered(ConnectionResetError):
    """The connection ended before any byte of an answer came back."""


class NotPlanledger(ValueError):
    """An answer no planledger server gives: a body that is not JSON, or not the shape of
    the answer asked for (the URL names some other server)."""


def not_planledger(status: int, what: str) -> NotPlanledger:
    return NotPlanledger(f"the server's answer (HTTP {status}) is {what}, not planledger's: "
                         "is --url a planledger server?")


class Response:
    """A server's answer: its status and body."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body

    def json(self) -> Any:
        """The body as JSON; NotPlanledger when it is not."""
        try:
            return json.loads(self.body)
        except ValueError:
            shown = self.text.strip()[:60]
            raise not_planledger(self.status, f"not JSON ({shown!r})" if shown
                                 else "empty") from None

    def problem(self) -> dict[str, Any]:
        """An error answer's body: planledger's problem (`reason`, `message`), or one that
        says what came back instead."""
        try:
            body = self.json()
        except NotPlanledger as error:
            return {"reason": "http", "message": str(error)}
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            return body
        return {"reason": "http", "message": str(not_planledger(self.status, "JSON"))}

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
        self._secure = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._secure else 80)
        named = f"[{self._host}]" if ":" in self._host else self._host
        default = 443 if self._secure else 80
        self._host_header = named if self._port == default else f"{named}:{self._port}"
        self._prefix = parts.path.rstrip("/")
        self._timeout = timeout
        self._socket: socket.socket | None = None
        self._reader: IO[bytes] | None = None
        self.headers: dict[str, str] = {}

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                body: Any = None, timeout: float) -> Response:
        """Send one request and read its whole answer; NoAnswer when there is none."""
        target = self._prefix + path + (f"?{urlencode(params, doseq=True)}" if params else "")
        headers = {"Host": self._host_header, "Accept-Encoding": "identity",
                   "Accept": "application/json", **self.headers}
        payload = b""
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if payload or method in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(payload))
        head = f"{method} {target} HTTP/1.1\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
        self._reopen_if_closed(timeout)
        request = head.encode("latin-1") + payload
        reused = self._socket is not None
        try:
            try:
                status, answer, keep = self._exchange(request, method, timeout)
            except _Unanswered:
                # The server closed the kept-alive connection as this request went out (its
                # end of file had not arrived when we looked). A request that changes
                # nothing is sent again on a new connection; any other may have been acted
                # on, so it is never sent twice.
                self.close()
                if not reused or method not in SAFE_METHODS:
                    raise
                status, answer, keep = self._exchange(request, method, timeout)
        except (OSError, ValueError, UnicodeError) as cut:
            self.close()
            raise NoAnswer(str(cut) or type(cut).__name__) from cut
        if not keep:
            self.close()
        return Response(status, answer)

    def _exchange(self, request: bytes, method: str, timeout: float,
                  ) -> tuple[int, bytes, bool]:
        """Send the request and read its answer (_Unanswered: the connection ended before
        any of it)."""
        sock, reader = self._open(timeout)
        try:
            sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError) as cut:
            raise _Unanswered(str(cut)) from cut
        return _read_answer(reader, method)

    def _open(self, timeout: float) -> tuple[socket.socket, IO[bytes]]:
        if self._socket is None or self._reader is None:
            sock = socket.create_connection((self._host, self._port), timeout)
            if self._secure:
                import ssl  # only for https: loading TLS costs a command line call

                context = ssl.create_default_context()
                sock = context.wrap_socket(sock, server_hostname=self._host)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._socket, self._reader = sock, sock.makefile("rb")
        return self._socket, self._reader

    def _reopen_if_closed(self, timeout: float) -> None:
        # A kept-alive connection the server closed while idle reads as readable (its end
        # of file): drop it before sending, so a request is never sent into a dead socket
        # (and never sent twice).
        self._timeout = timeout
        if self._socket is None:
            return
        if select.select([self._socket], [], [], 0)[0]:
            self.close()
        else:
            self._socket.settimeout(timeout)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        if self._socket is not None:
            self._socket.close()
        self._socket = self._reader = None


def _line(reader: IO[bytes]) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise ValueError("an answer's line is too long")
    return line


def _read_answer(reader: IO[bytes], method: str) -> tuple[int, bytes, bool]:
    """The status, body and whether the connection stays open, of one answer."""
    first = True
    while True:
        try:
            status_line = _line(reader)
        except ConnectionResetError as cut:
            if first:
                raise _Unanswered(str(cut)) from cut
            raise
        if not status_line:
            raise (_Unanswered if first else ConnectionResetError)(
                "Remote end closed connection without response")
        first = False
        version, _, rest = status_line.decode("latin-1").partition(" ")
        if not version.startswith("HTTP/"):
            raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
        status = int(rest[:3])
        headers = _headers(reader)
        if status >= 200 or status == 101:
            break  # 1xx answers (100 Continue) come before the real one
    close = (headers.get("connection", "").lower() == "close"
             or (version == "HTTP/1.0" and headers.get("connection", "").lower()
                 != "keep-alive"))
    if method == "HEAD" or status in (204, 304):
        return status, b"", not close
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return status, _chunks(reader), not close
    if "content-length" in headers:
        return status, _exactly(reader, int(headers["content-length"])), not close
    return status, reader.read(), False  # the body runs to the end of the connection


def _headers(reader: IO[bytes]) -> dict[str, str]:
    headers: dict[str, str] = {}
    while True:
        line = _line(reader)
        if line in (b"\r\n", b"\n", b""):
            return headers
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()


def _exactly(reader: IO[bytes], length: int) -> bytes:
    data = reader.read(length)
    if len(data) < length:
        raise ConnectionError(f"IncompleteRead({len(data)} bytes read, "
                              f"{length - len(data)} more expected)")
    return data


def _chunks(reader: IO[bytes]) -> bytes:
    parts: list[bytes] = []
    while True:
        size = int(_line(reader).split(b";")[0].strip(), 16)
        if size == 0:
            _headers(reader)  # trailers, up to the blank line
            return b"".join(parts)
        parts.append(_exactly(reader, size))
        _exactly(reader, 2)  # the CRLF after each chunk
