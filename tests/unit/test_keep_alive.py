"""An idle connection outlives the clients' own idle limit, so a client never sends on a
connection the server is closing at that moment (a read error on an unanswered request)."""

import httpx
import httpx2

from planledger.api.http.server import KEEP_ALIVE_SECONDS

MARGIN_SECONDS = 5.0  # a busy machine's event loop runs late: the client's close lands first


def test_the_server_keeps_an_idle_connection_longer_than_httpx_and_the_mcp_sdk() -> None:
    for expiry in (httpx.Limits().keepalive_expiry, httpx2.Limits().keepalive_expiry):
        assert expiry is not None
        assert expiry + MARGIN_SECONDS <= KEEP_ALIVE_SECONDS
