"""The wire under RemoteClient (api.remote_http) against a real HTTP server on a socket:
the path prefix, query and JSON body arrive as sent; a kept-alive connection the server
closed while idle is reopened, not written into; no server is NoAnswer."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from planledger.api.remote_http import Connection, NoAnswer
from planledger.bench.servers import free_port


class Echo(BaseHTTPRequestHandler):
    """Answers every request with what it received, as JSON; `/bye` closes after; a
    `/stale` request that is not its connection's first is read and the connection closed
    without an answer (a server closing an idle connection as a request comes in)."""

    protocol_version = "HTTP/1.1"
    served = 0  # requests this connection has read
    received: ClassVar[list[str]] = []  # every request's method and path, all connections

    def _stale(self) -> bool:
        self.served += 1
        Echo.received.append(f"{self.command} {self.path}")
        if self.path.endswith("/stale") and self.served > 1:
            self.close_connection = True
            return True
        return False

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else None
        data = json.dumps({"method": self.command, "path": self.path, "body": body,
                           "auth": self.headers.get("Authorization")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        if self.path.endswith("/bye"):
            self.close_connection = True

    def do_GET(self) -> None:
        if not self._stale():
            self._answer()

    def do_POST(self) -> None:
        if not self._stale():
            self._answer()

    def log_message(self, *args: object) -> None:
        pass


class Server(ThreadingHTTPServer):
    """Tells when it has closed a connection (so a test knows the socket is shut)."""

    closed = threading.Event()

    def shutdown_request(self, request: object) -> None:
        super().shutdown_request(request)  # type: ignore[arg-type]
        self.closed.set()


@pytest.fixture
def server() -> Iterator[str]:
    Server.closed = threading.Event()
    httpd = Server(("127.0.0.1", 0), Echo)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/prefix/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_prefix_query_body_and_headers_arrive_as_sent(server: str) -> None:
    wire = Connection(server, timeout=5)
    wire.headers["Authorization"] = "Bearer t"
    answer = wire.request("POST", "/api/x", params={"session": ["a", "b"], "after": 3},
                          body={"k": "v"}, timeout=5).json()
    assert answer == {"method": "POST", "path": "/prefix/api/x?session=a&session=b&after=3",
                      "body": '{"k": "v"}', "auth": "Bearer t"}
    wire.close()


def test_a_read_cut_off_on_a_reused_connection_is_asked_again_and_a_write_is_not(
        server: str) -> None:
    Echo.received = []
    wire = Connection(server, timeout=5)
    assert wire.request("GET", "/first", timeout=5).status == 200
    assert wire.request("GET", "/stale", timeout=5).json()["path"] == "/prefix/stale"
    assert wire.request("POST", "/second", timeout=5).status == 200  # kept alive
    with pytest.raises(NoAnswer):
        wire.request("POST", "/stale", timeout=5)
    assert Echo.received == ["GET /prefix/first", "GET /prefix/stale", "GET /prefix/stale",
                             "POST /prefix/second", "POST /prefix/stale"]
    wire.close()


def test_a_connection_the_server_closed_is_reopened_for_the_next_request(server: str) -> None:
    wire = Connection(server, timeout=5)
    assert wire.request("GET", "/bye", timeout=5).status == 200
    assert Server.closed.wait(5)
    # The server closed its end after answering; the next request goes on a new one.
    assert wire.request("GET", "/again", timeout=5).json()["path"] == "/prefix/again"
    wire.close()


def test_no_server_is_no_answer() -> None:
    wire = Connection(f"http://127.0.0.1:{free_port()}", timeout=5)
    with pytest.raises(NoAnswer):
        wire.request("GET", "/api/plans", timeout=5)


def test_a_url_that_names_no_server_is_refused() -> None:
    with pytest.raises(ValueError, match="not a server's URL"):
        Connection("127.0.0.1:8765", timeout=5)
