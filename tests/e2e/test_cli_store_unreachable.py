"""A command on a PostgreSQL store that cannot be reached says so in one line and exits 1:
no traceback, whichever path answers it (the short one or the full command line)."""

import socket
import subprocess
import sys

import pytest


def _closed_port() -> int:
    with socket.socket() as probe:  # bound, then closed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize("argv", [["plan", "list"], ["ready", "p", "--json"],
                                  ["plan", "show", "p"]])
def test_an_unreachable_postgresql_store_is_one_line_and_exit_1(argv: list[str]) -> None:
    db = f"postgresql://postgres@127.0.0.1:{_closed_port()}/test"
    done = subprocess.run([sys.executable, "-m", "planledger", *argv, "--db", db],
                          check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == "cannot connect to the database; retry once it is up"
    assert "Traceback" not in done.stdout + done.stderr
