"""A PostgreSQL primary and its streaming standby, made fresh from the binaries on the
machine, for tests and benchmarks of a failover.

`pg_pair()` makes both clusters in a temporary directory (initdb, then `pg_basebackup -R`),
each on a free port of 127.0.0.1 with trust authentication, starts them, waits until the
standby streams, creates planledger's schema on the primary, and removes everything
afterwards, also when the block fails. `kill_primary()` stops the primary as a dead
machine does (`pg_ctl stop -m immediate`); `promote()` makes the standby the primary and
returns once it takes writes.

Replication is synchronous (the primary's commit waits until the standby has the WAL:
`synchronous_standby_names`, `synchronous_commit`) or asynchronous. On one machine the
standby of an asynchronous pair is only microseconds behind, which hides what a real one
can lose; `wal_delay` passes its WAL through a relay that holds it back that long, as a
slow link would, and the relay's bytes die with the primary.

PostgreSQL refuses to run as root: as root, the binaries run as the `postgres` user.
"""

import os
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from planledger.bench.servers import free_port
from planledger.infra.pg_schema import init_schema

PG_ROOT = Path("/usr/lib/postgresql")
STANDBY_NAME = "planledger_standby"
DEADLINE = 60.0  # seconds for a cluster to start, stream or be promoted on a loaded machine
# `on` waits until the standby has flushed the commit's WAL: a promoted standby holds every
# acknowledged commit. (`remote_apply` also waits for it to be applied, for reads.)
SYNCHRONOUS_COMMIT = "on"


class PgBinariesMissing(RuntimeError):
    """The PostgreSQL server binaries (initdb, pg_ctl, pg_basebackup) are not installed."""


def pg_bin() -> Path:
    """The newest installed PostgreSQL's bin directory; PgBinariesMissing without one."""
    found = sorted((d for d in PG_ROOT.glob("*/bin") if (d / "pg_basebackup").exists()
                    and (d / "initdb").exists() and (d / "pg_ctl").exists()),
                   key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0)
    if not found:
        raise PgBinariesMissing(f"no initdb, pg_ctl and pg_basebackup under {PG_ROOT}/*/bin")
    return found[-1]


def admin_url(port: int) -> str:
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


@dataclass
class PgPair:
    """A running primary and standby: their ports, and the `--db` URL naming both."""

    root: Path
    primary_port: int
    standby_port: int
    synchronous: bool
    run: Callable[..., None] = field(repr=False)
    relay: "DelayingRelay | None" = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """The high-availability `--db`: both hosts, libpq picks the one taking writes."""
        return (f"postgresql://postgres@127.0.0.1:{self.primary_port},"
                f"127.0.0.1:{self.standby_port}/postgres?target_session_attrs=read-write")

    @property
    def primary_url(self) -> str:
        return admin_url(self.primary_port)

    @property
    def standby_url(self) -> str:
        return admin_url(self.standby_port)

    def kill_primary(self) -> None:
        """Stop the primary at once, as its machine dying does: no checkpoint, and WAL not
        yet shipped (held in the relay) is gone."""
        if self.relay is not None:
            self.relay.close()
        self.run("pg_ctl", "-D", str(self.root / "primary"), "stop", "-m", "immediate")

    def promote(self) -> None:
        """Promote the standby; returns once it is out of recovery (it takes writes)."""
        self.run("pg_ctl", "-D", str(self.root / "standby"), "promote", "-w",
                 "-t", str(int(DEADLINE)))
        _until(lambda: _query(self.standby_url, "SELECT NOT pg_is_in_recovery()") is True,
               "the standby to leave recovery")

    def replayed_lsn(self) -> str:
        """The standby's last replayed WAL position."""
        return str(_query(self.standby_url, "SELECT pg_last_wal_replay_lsn()"))

    def primary_lsn(self) -> str:
        return str(_query(self.primary_url, "SELECT pg_current_wal_lsn()"))

    def caught_up(self) -> bool:
        """Whether the standby has replayed everything the primary wrote so far."""
        lsn = self.primary_lsn()
        return _query(self.standby_url,
                      f"SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn") is True


@contextmanager
def pg_pair(*, synchronous: bool, wal_delay: float = 0.0) -> Iterator[PgPair]:
    """A fresh primary with planledger's schema and a streaming standby, removed after."""
    bin_dir = pg_bin()
    root = Path(tempfile.mkdtemp(prefix="planledger-pg-pair-"))
    as_postgres = os.geteuid() == 0
    if as_postgres:
        shutil.chown(root, "postgres", "postgres")

    def run(program: str, *args: str) -> None:
        command = [str(bin_dir / program), *args]
        if as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=DEADLINE,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{program} {' '.join(args)} failed:\n{done.stdout}{done.stderr}"
                               f"{_logs(root)}")

    with ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, root, ignore_errors=True)
        primary, standby = root / "primary", root / "standby"
        primary_port, standby_port = free_port(), free_port()
        run("initdb", "-D", str(primary), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--no-instructions")
        _configure(primary, primary_port, root, synchronous=synchronous)
        cleanup.callback(_stop, run, primary)
        run("pg_ctl", "-D", str(primary), "-l", str(root / "primary.log"), "-w",
            "-t", str(int(DEADLINE)), "start")
        relay = None
        source = primary_port
        if wal_delay > 0:
            relay = cleanup.enter_context(delaying_relay(primary_port, wal_delay))
            source = relay.port
        run("pg_basebackup", "-D", str(standby), "-R", "-X", "stream", "-c", "fast",
            "-d", f"host=127.0.0.1 port={source} user=postgres "
                  f"application_name={STANDBY_NAME}")
        # The standby's configuration is the primary's copy: its own port, and no
        # synchronous standby of its own, or a promoted standby would wait forever.
        _configure(standby, standby_port, root, synchronous=False)
        cleanup.callback(_stop, run, standby)
        run("pg_ctl", "-D", str(standby), "-l", str(root / "standby.log"), "-w",
            "-t", str(int(DEADLINE)), "start")
        pair = PgPair(root, primary_port, standby_port, synchronous, run, relay)
        _until(lambda: _streaming(pair), "the standby to stream from the primary")
        init_schema(pair.url)
        yield pair


def _configure(data: Path, port: int, root: Path, *, synchronous: bool) -> None:
    settings = {
        "port": str(port),
        "listen_addresses": "'127.0.0.1'",
        "unix_socket_directories": f"'{root}'",  # not the system's: no clash with its server
        "max_connections": "100",
        "wal_level": "replica",
        "hot_standby": "on",
        "synchronous_standby_names": f"'{STANDBY_NAME}'" if synchronous else "''",
        "synchronous_commit": SYNCHRONOUS_COMMIT if synchronous else "local",
        # The killed primary never starts again and the standby is never killed: what
        # survives a failover is what replication carried, whatever the disk holds.
        "fsync": "off",
        "full_page_writes": "off",
    }
    with (data / "postgresql.conf").open("a") as conf:
        conf.write("\n# planledger failover harness (bench/pg_standby.py)\n")
        conf.writelines(f"{name} = {value}\n" for name, value in settings.items())


def _stop(run: Callable[..., None], data: Path) -> None:
    if (data / "postmaster.pid").exists():
        with suppress(RuntimeError, subprocess.TimeoutExpired):
            run("pg_ctl", "-D", str(data), "stop", "-m", "immediate")


def _logs(root: Path) -> str:
    return "".join(f"\n--- {log.name}:\n{log.read_text(errors='replace')[-2000:]}"
                   for log in sorted(root.glob("*.log")))


def _query(url: str, sql: str) -> object:
    """The first column of the first row; None when the server does not answer."""
    try:
        with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
            row = conn.execute(sql).fetchone()
            return None if row is None else row[0]
    except psycopg.OperationalError:
        return None


def _streaming(pair: PgPair) -> bool:
    state = _query(pair.primary_url,
                   "SELECT state || '/' || sync_state FROM pg_stat_replication "
                   f"WHERE application_name = '{STANDBY_NAME}'")
    return state == ("streaming/sync" if pair.synchronous else "streaming/async")


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():  # polling the server with a deadline: the real condition
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {DEADLINE:.0f} s waiting for {what}")
        time.sleep(0.05)


class DelayingRelay:
    """A TCP relay to a local port that holds every byte `delay` seconds before passing it
    on, in order. Closing it drops what it holds, as a link to a dead machine does."""

    def __init__(self, target_port: int, delay: float) -> None:
        self.target, self.delay = target_port, delay
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.closed = threading.Event()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self.closed.set()
        self.listener.close()
        for sock in list(self.sockets):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                continue
            self.sockets += [client, upstream]
            for one, other in ((client, upstream), (upstream, client)):
                held: queue.Queue[tuple[float, bytes]] = queue.Queue()
                threading.Thread(target=self._read, args=(one, held), daemon=True).start()
                threading.Thread(target=self._write, args=(other, held), daemon=True).start()

    def _read(self, source: socket.socket, held: "queue.Queue[tuple[float, bytes]]") -> None:
        with suppress(OSError):
            while data := source.recv(65536):
                held.put((time.monotonic() + self.delay, data))
        held.put((0.0, b""))

    def _write(self, sink: socket.socket, held: "queue.Queue[tuple[float, bytes]]") -> None:
        with suppress(OSError):
            while (item := held.get())[1] and not self.closed.is_set():
                # The delay being simulated, not a synchronisation: the link is this slow.
                time.sleep(max(0.0, item[0] - time.monotonic()))
                if self.closed.is_set():
                    break
                sink.sendall(item[1])
            sink.shutdown(socket.SHUT_WR)


@contextmanager
def delaying_relay(target_port: int, delay: float) -> Iterator[DelayingRelay]:
    relay = DelayingRelay(target_port, delay)
    try:
        yield relay
    finally:
        relay.close()
