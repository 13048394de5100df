"""Real `planledger serve` processes on free ports, sharing one database.

Each replica is the installed command in its own OS process (uvicorn, real sockets), started
with the same token secret so a session token from one replica works on every other, the way
several replicas behind a load balancer run. The benchmarks run on them, and so do the
tests that need a real server (they are installed with the package, so an installed
`planledger bench` runs too).
"""

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import httpx

from planledger.api.settings import MAX_STEPS_SETTING
from planledger.ledger.domain.plans import MAX_STEPS_PER_PLAN

PLANLEDGER = str(Path(sys.executable).parent / "planledger")
SECRET = "replicas-share-this-secret-0123456789abcdef"
START_TIMEOUT = 90.0  # import-bound; a loaded 2-core machine can take long
# A benchmark's server is its own, so it takes plans of any size a benchmark sets up in one
# request (the cap on steps per request protects other agents on a shared server).
ROOMY = {MAX_STEPS_SETTING: str(MAX_STEPS_PER_PLAN)}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Replica:
    """One running server: its base URL and its process."""

    db: str
    port: int
    process: subprocess.Popen[bytes] = field(repr=False)
    log: IO[bytes] = field(repr=False)

    def output(self) -> str:
        """The end of what the server printed (for failure messages)."""
        self.log.flush()
        return Path(self.log.name).read_text(errors="replace")[-3000:]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, connections drop mid-transaction."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


def app_name(port: int) -> str:
    return f"planledger-replica-{port}"


def launch_replica(db: str, extra_env: dict[str, str] | None = None,
                   max_files: int | None = None) -> Replica:
    """Start `planledger serve` on a free port, without waiting for it. `max_files`: the
    server may open at most so many files (its soft and hard limits both, so raising
    the soft one at start gains nothing)."""
    port = free_port()
    # PGAPPNAME labels the replica's database connections (pg_stat_activity), so a test or
    # a benchmark can find the server processes working for it.
    env = {**os.environ, "PLANLEDGER_SECRET": SECRET, "PGAPPNAME": app_name(port),
           **(extra_env or {})}
    # Output goes to a file, not a pipe: a pipe nobody reads fills up and stalls the server.
    output = tempfile.NamedTemporaryFile(prefix=f"planledger-{port}-", suffix=".log")  # noqa: SIM115 (closed by stop)
    process = subprocess.Popen(
        [PLANLEDGER, "serve", "--db", db, "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=output, stderr=subprocess.STDOUT,
        # The child only sets its limit and execs: it takes no lock a thread here may hold.
        preexec_fn=None if max_files is None else _limit_files(max_files))  # noqa: PLW1509
    return Replica(db, port, process, output)


def _limit_files(count: int) -> Callable[[], None]:
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))

    return limit


def start_replica(db: str, extra_env: dict[str, str] | None = None,
                  max_files: int | None = None) -> Replica:
    """Start `planledger serve` on a free port; returns once /healthz answers."""
    replica = launch_replica(db, extra_env, max_files)
    wait_healthy(replica)
    return replica


def wait_healthy(replica: Replica) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:  # polling with a deadline: the server is booting
        if replica.process.poll() is not None:
            raise RuntimeError(f"replica on port {replica.port} exited: {replica.output()}")
        try:
            if httpx.get(f"{replica.url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    replica.stop()
    raise RuntimeError(f"replica on port {replica.port} did not answer within {START_TIMEOUT}s")


@contextmanager
def replicas(db: str, count: int, extra_env: dict[str, str] | None = None,
             ) -> Iterator[Sequence[Replica]]:
    """`count` replicas on one database, launched at the same moment (none waits for
    another to be up), stopped afterwards."""
    with ExitStack() as stack:
        started = []
        for _ in range(count):
            replica = launch_replica(db, extra_env)
            stack.callback(replica.stop)
            started.append(replica)
        for replica in started:
            wait_healthy(replica)
        yield started


class Agent:
    """One HTTP client acting for one session, talking to one replica."""

    def __init__(self, replica: Replica, name: str, token: str | None = None,
                 session_id: str | None = None) -> None:
        self.replica = replica
        self.http = httpx.Client(base_url=replica.url, timeout=30)
        if token is None:
            started = self.http.post("/api/sessions", json={"name": name})
            started.raise_for_status()
            token, session_id = started.json()["token"], started.json()["session_id"]
        self.token, self.session_id = token, str(session_id)
        self.http.headers["Authorization"] = f"Bearer {token}"

    def on(self, replica: Replica) -> "Agent":
        """The same session, talking to another replica."""
        return Agent(replica, "", self.token, self.session_id)

    def claim(self, step_id: str) -> httpx.Response:
        return self.http.post(f"/api/steps/{step_id}/claim")

    def claim_next(self, plan: str) -> httpx.Response:
        return self.http.post(f"/api/plans/{plan}/claim-next")

    def complete(self, step_id: str, fence: int) -> httpx.Response:
        return self.http.post(f"/api/steps/{step_id}/complete", json={"fence": fence})

    def close(self) -> None:
        self.http.close()


def author_at(url: str) -> dict[str, str]:
    """Headers that author plan and step changes at the server at `url` (every write names
    its author): those of a session started for it."""
    started = httpx.post(f"{url}/api/sessions", json={"name": "planner"}, timeout=30)
    started.raise_for_status()
    return {"Authorization": f"Bearer {started.json()['token']}"}


def create_plan(replica: Replica, slug: str, steps: list[dict[str, object]]) -> list[str]:
    """Create a plan through the replica; returns its step ids in the given order."""
    response = httpx.post(f"{replica.url}/api/plans", timeout=60, headers=author_at(replica.url),
                          json={"slug": slug, "title": slug, "steps": steps})
    response.raise_for_status()
    return [str(step["step_id"]) for step in response.json()["steps"]]
