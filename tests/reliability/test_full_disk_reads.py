"""A full disk under the server (SQLite) costs a refused write little, and reads go on at
their usual pace while clients keep retrying writes (issue 20). Figures: `python -m planledger.bench
disk_full`."""

import statistics

import httpx
import pytest

from planledger.bench.disk_full import (
    can_mount,
    fill,
    health_latencies,
    server_on_small_disk,
    with_writers,
)
from tests.support.live_server import author


@pytest.mark.slow
@pytest.mark.skipif(not can_mount(), reason="needs mount namespaces (unshare -m) to fill a disk")
def test_refused_writes_are_cheap_and_reads_are_not_starved_by_writers_retrying() -> None:
    with server_on_small_disk("600k") as server, \
            httpx.Client(base_url=server.url, timeout=30) as http:
        headers = author(http)
        http.headers.update(headers)
        fill(http)
        idle = statistics.median(health_latencies(server.url, 1.0))
        reads, refused = with_writers(server.url, headers, 4, 2.0)
        output = server.output()
    # Generous bounds for a loaded machine: before, a refused write took 2.3 s and reads
    # queued behind them for seconds.
    assert statistics.median(refused) < 0.1, refused
    assert statistics.median(reads) < max(10 * idle, 0.1), (idle, reads)
    assert "answered 503" in output  # one line per refusal ...
    assert "Traceback" not in output  # ... not a traceback (rendering one took 0.25 s)
