"""A `--db` that names several PostgreSQL hosts and libpq's own parameters, on a real server:
libpq skips a host that is down, every connection carries the parameters given, and a write
that reaches a read-only server answers 503 with Retry-After (as a standby not yet promoted
does), never 500.
"""

import socket
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import psycopg
import pytest

from planledger.api.runtime import open_runtime
from planledger.bench.servers import Agent, create_plan, replicas
from planledger.infra.pg_schema import init_schema
from planledger.ledger.application import NewStep
from tests.support import OPERATOR
from tests.support.postgres import BASE_URL, fresh_schema


def _closed_port() -> int:
    """A port nothing listens on (bound, then let go of, by this process)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _with_hosts(url: str, hosts: str, **parameters: str) -> str:
    """`url` with its host list replaced by `hosts` and `parameters` added to its query."""
    scheme, rest = url.split("://", 1)
    userinfo, _, after = rest.partition("@")
    path = after[after.index("/"):]
    query = "&".join(f"{name}={quote(value)}" for name, value in parameters.items())
    return f"{scheme}://{userinfo}@{hosts}{path}&{query}"


@pytest.fixture
def url() -> Iterator[str]:
    with fresh_schema() as made:
        yield made


def test_a_host_that_is_down_is_skipped_and_every_connection_carries_the_parameters(
    url: str,
) -> None:
    live = BASE_URL.split("@", 1)[1].split("/", 1)[0]
    name = f"planledger-hosts-{url.rsplit('=', 1)[-1]}"[:60]
    db = _with_hosts(url, f"127.0.0.1:{_closed_port()},{live}",
                     target_session_attrs="read-write", application_name=name)
    init_schema(db)  # `db init` connects the same way (idempotent on a made schema)
    runtime = open_runtime(db)
    try:
        _, (step,) = runtime.ledger.create_plan("p", "P", steps=[NewStep("job")], actor=OPERATOR)
        session = runtime.ledger.start_session("a").id
        assert runtime.ledger.claim(step, session).fence == 1
        with psycopg.connect(BASE_URL) as admin:
            named = admin.execute("SELECT count(*) FROM pg_stat_activity "
                                  "WHERE application_name = %s", (name,)).fetchone()
        assert named is not None and named[0] >= 1  # the store's pool, under the given name
    finally:
        runtime.close()


def test_a_write_that_reaches_a_read_only_server_answers_503_with_retry_after(
    url: str,
) -> None:
    live = BASE_URL.split("@", 1)[1].split("/", 1)[0]
    read_only = _with_hosts(url, live, options="-c default_transaction_read_only=on")
    with replicas(url, 1) as (writable,):
        (step,) = create_plan(writable, "p", [{"title": "job"}])
        agent = Agent(writable, "a")
        with replicas(read_only, 1) as (standby,):
            on_standby = agent.on(standby)
            refused = on_standby.claim(step)
            assert refused.status_code == 503, refused.text
            assert refused.json()["reason"] == "store_unavailable"
            assert int(refused.headers["Retry-After"]) >= 1
            assert httpx.get(f"{standby.url}/api/plans/p", timeout=30).status_code == 200
            on_standby.close()
        assert agent.claim(step).status_code == 200  # nothing of the refused write landed
        agent.close()
