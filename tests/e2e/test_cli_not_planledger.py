"""`--url` naming a server that is not planledger (a web page, an empty 404, JSON of
another shape): every command says so in one line and exits 1, never a traceback. The
server here is a real socket answering each request as given."""

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ANSWERS = {
    "html": (200, b"<!doctype html><title>hello</title>"),
    "empty-404": (404, b""),
    "other-json": (200, b'{"hello": "world"}'),
}


@pytest.fixture(params=sorted(ANSWERS))
def stranger(request: pytest.FixtureRequest) -> Iterator[str]:
    status, body = ANSWERS[request.param]

    class Answer(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._answer()

        def do_POST(self) -> None:
            self._answer()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("command", [["ready", "x"], ["plan", "list"],
                                     ["export", "beads", "--plan", "x"],
                                     ["session", "start", "--name", "a"]])
def test_a_server_that_is_not_planledger_is_named_as_such(stranger: str,
                                                         command: list[str]) -> None:
    ran = subprocess.run([sys.executable, "-m", "planledger", *command, "--url", stranger],
                         capture_output=True, text=True, timeout=120, check=False)

    assert ran.returncode == 1, (ran.stdout, ran.stderr)
    assert "Traceback" not in ran.stderr
    assert "planledger server?" in ran.stderr, ran.stderr
