"""PostgreSQL held down under `planledger serve`: how long each route takes to answer.

A proxy between the server and PostgreSQL (bench.holdable_proxy) is held: connections stay
open and nothing answers, as behind a dead link or on a hung host. Each route's answer time
is measured against the promise, the pool's connect timeout plus a second (here
`connect_timeout=1`, so 2 s); the same route with the database up is the informing
baseline. Goal: every route within the promise (ratio <= 1.05x: the client's
stopwatch also holds the HTTP round trip); before, reads hung past 60 s.
"""

import time

import httpx

from planledger.bench.holdable_proxy import holdable_proxy
from planledger.bench.scratch_schemas import postgres_reachable, scratch_schema
from planledger.bench.servers import Agent, create_plan, start_replica
from planledger.bench.timing import Figure

CONNECT_TIMEOUT = 1
PROMISE = CONNECT_TIMEOUT + 1.0
GOAL = 1.05  # the promise, plus the HTTP round trip the client's stopwatch also holds


def _timed(http: httpx.Client, method: str, path: str) -> tuple[float, int]:
    started = time.perf_counter()
    answer = http.request(method, path, json={} if method == "POST" else None, timeout=120)
    return time.perf_counter() - started, answer.status_code


def run(smoke: bool = False) -> list[Figure]:
    if not postgres_reachable():
        print("pg_outage: skipped (PostgreSQL is not reachable)")
        return []
    figures = []
    with scratch_schema() as url, holdable_proxy("127.0.0.1", 5432) as proxy:
        held = url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
        server = start_replica(f"{held}&connect_timeout={CONNECT_TIMEOUT}")
        try:
            steps = create_plan(server, "p", [{"key": "a", "title": "a"},
                                              {"key": "b", "title": "b"}])
            agent = Agent(server, "worker")
            agent.claim(steps[0]).raise_for_status()
            routes = [("GET", "/healthz"), ("GET", "/api/plans/p/ready"), ("GET", "/api/console"),
                      ("POST", f"/api/steps/{steps[1]}/claim")]
            if not smoke:
                routes += [("GET", "/api/plans"), ("GET", f"/api/steps/{steps[1]}"),
                           ("GET", "/api/log"), ("POST", "/api/sessions")]
            up = {route: _timed(agent.http, *route)[0] for route in routes
                  if route[0] == "GET"}
            proxy.hold()
            for method, path in routes:
                took, status = _timed(agent.http, method, path)
                name = f"{method} {path.replace(steps[1], '{id}')} held down ({status})"
                figures.append(Figure(name, took * 1000, "ms", "the promise", PROMISE * 1000,
                                      goal=GOAL, lower_is_better=True))
                if (method, path) in up:
                    figures.append(Figure(f"{method} {path.replace(steps[1], '{id}')} up",
                                          up[(method, path)] * 1000, "ms"))
            proxy.release()
            agent.close()
        finally:
            server.stop()
    return figures
