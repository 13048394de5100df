"""A claim-next waiting in one server is woken by what another server process appends to
the same store: SQLite (one file, two processes) and PostgreSQL (two replicas on one
database). Server A runs in this process (so the test can watch its line of waiters);
server B is a real `planledger serve` process sharing A's store and token secret. The pair
serves the module's tests (a start of B costs seconds here), each on its own plan."""

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from planledger.api.runtime import open_runtime
from planledger.api.service import Service
from planledger.bench.servers import SECRET, Replica, start_replica
from tests.support.live_server import LiveServer, author, live_server, session
from tests.support.postgres import fresh_schema


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
       ) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path_factory.mktemp("waiting") / "ledger.sqlite")
        return
    with fresh_schema() as url:
        yield url


@pytest.fixture(scope="module")
def servers(db: str) -> Iterator[tuple[LiveServer, Replica]]:
    runtime = open_runtime(db, secret=SECRET.encode())
    try:
        with live_server(runtime) as here:
            elsewhere = start_replica(db)
            try:
                yield here, elsewhere
            finally:
                elsewhere.stop()
    finally:
        runtime.close()


def wait_here(here: LiveServer, plan: str, headers: dict[str, str], seconds: int,
              then: httpx.Client, path: str) -> dict[str, object]:
    """Ask A for `plan`'s next step, waiting; once A holds it in line, POST `path` to B."""
    service: Service = here.app.state.service

    async def ask() -> dict[str, object]:
        async with httpx.AsyncClient(base_url=here.url, timeout=60) as client:
            waiting = asyncio.ensure_future(client.post(
                f"/api/plans/{plan}/claim-next", headers=headers,
                json={"wait_seconds": seconds, "lease_seconds": 60}))
            assert await asyncio.to_thread(service.waiting.waiting, plan, 1), "never queued"
            if path:
                freed = await asyncio.to_thread(then.post, path)
                assert freed.status_code == 200, freed.text
            answer = await waiting
            assert answer.status_code == 200, answer.text
            body: dict[str, object] = answer.json()
            return body

    return asyncio.run(ask())


def test_a_waiter_on_one_server_claims_the_step_completed_on_another(
    servers: tuple[LiveServer, Replica],
) -> None:
    here, elsewhere = servers
    with here.client() as http:
        made = http.post("/api/plans", headers=author(http), json={
            "slug": "completed", "title": "Work", "steps": [
                {"key": "a", "title": "first"}, {"title": "second", "depends_on": ["a"]}]})
        first, second = (s["step_id"] for s in made.json()["steps"])
        _, holder = session(http, "holder")
        _, agent = session(http, "agent")
    with httpx.Client(base_url=elsewhere.url, headers=holder, timeout=30) as there:
        claimed = there.post(f"/api/steps/{first}/claim")
        assert claimed.status_code == 200, claimed.text
        answer = wait_here(here, "completed", agent, 60, there, f"/api/steps/{first}/complete")

    assert answer["claimed"]["step_id"] == second  # type: ignore[index]


def test_a_lease_taken_on_another_server_lapses_into_the_waiter_here(
    servers: tuple[LiveServer, Replica],
) -> None:
    here, elsewhere = servers
    with here.client() as http:
        made = http.post("/api/plans", headers=author(http), json={
            "slug": "lapsed", "title": "Work", "steps": [{"title": "only"}]})
        (step_id,) = (s["step_id"] for s in made.json()["steps"])
        holder_id, holder = session(http, "holder")
        _, agent = session(http, "agent")
    with httpx.Client(base_url=elsewhere.url, headers=holder, timeout=30) as there:
        claimed = there.post(f"/api/steps/{step_id}/claim", json={"lease_seconds": 1})
        assert claimed.status_code == 200, claimed.text
        # The holder then goes silent: nothing is appended when its lease lapses.
        answer = wait_here(here, "lapsed", agent, 60, there, "")

    assert answer["claimed"]["step_id"] == step_id  # type: ignore[index]
    assert answer["claimed"]["took_over_from"] == holder_id  # type: ignore[index]
