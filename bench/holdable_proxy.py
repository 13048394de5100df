"""A TCP proxy in front of PostgreSQL that a test can hold: while held, it accepts
connections and forwards nothing, and traffic on open connections stops, the way a
database behind a dead network link or a hung host looks to its clients (a refused login
fails at once; this makes clients wait on their timeouts)."""

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class HoldableProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.flowing = threading.Event()
        self.flowing.set()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def hold(self) -> None:
        self.flowing.clear()

    def release(self) -> None:
        self.flowing.set()

    def close(self) -> None:
        self.closed = True
        self.flowing.set()
        self.listener.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        self.flowing.wait()  # a connection made while held hangs, unanswered
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            client.close()
            return
        for one, other in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(one, other), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self.flowing.wait()  # held: the bytes wait, as on a dead link
                if self.closed:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)


@contextmanager
def holdable_proxy(host: str, port: int) -> Iterator[HoldableProxy]:
    proxy = HoldableProxy(host, port)
    try:
        yield proxy
    finally:
        proxy.close()
