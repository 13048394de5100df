"""PostgreSQL held down (a dead link or a hung host: connections open, nothing answers):
every route answers within the configured connect timeout plus a second, 503 naming the
trouble and never a 500, and the server serves again by itself once the database answers."""

import time

import httpx
import pytest

from planledger.bench.holdable_proxy import holdable_proxy
from planledger.bench.servers import Agent, create_plan, start_replica
from tests.support.postgres import fresh_schema

CONNECT_TIMEOUT = 1
JITTER = 0.5  # a loaded test machine's scheduling, on top of the promise


@pytest.mark.slow
def test_every_route_answers_in_bounded_time_while_postgres_is_held_down() -> None:
    with fresh_schema() as url, holdable_proxy("127.0.0.1", 5432) as proxy:
        held_url = url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
        server = start_replica(f"{held_url}&connect_timeout={CONNECT_TIMEOUT}")
        try:
            steps = create_plan(server, "p", [{"key": "a", "title": "a"},
                                              {"key": "b", "title": "b"}])
            agent = Agent(server, "worker")
            agent.claim(steps[0]).raise_for_status()
            routes = [("GET", "/healthz"), ("GET", "/api/plans"), ("GET", "/api/plans/p"),
                      ("GET", "/api/plans/p/ready"), ("GET", "/api/console"),
                      ("GET", f"/api/steps/{steps[1]}"), ("GET", "/api/log"),
                      ("POST", f"/api/steps/{steps[1]}/claim"), ("POST", "/api/plans/p/ready"),
                      ("POST", f"/api/steps/{steps[0]}/heartbeat"), ("POST", "/api/sessions")]
            proxy.hold()
            slow = []
            for method, path in routes:
                started = time.monotonic()
                answer = agent.http.request(method, path, json={} if method == "POST" else None,
                                            timeout=20)
                took = time.monotonic() - started
                assert answer.status_code == 503, (path, answer.text)
                assert answer.json()["reason"] == "store_unavailable"
                assert answer.headers["Retry-After"] == "1"
                if took > CONNECT_TIMEOUT + 1 + JITTER:
                    slow.append((method, path, round(took, 2)))
            assert slow == []
            proxy.release()
            deadline = time.monotonic() + 30
            while (answer := agent.claim(steps[1])).status_code == 503 \
                    and time.monotonic() < deadline:  # polling: the pool reconnects
                time.sleep(0.2)
            assert answer.status_code == 200, answer.text
            assert httpx.get(f"{server.url}/api/plans/p/ready").status_code == 200
            agent.close()
            assert "Traceback" not in server.output()
        finally:
            server.stop()
