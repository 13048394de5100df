"""One `planledger serve` (its own OS process, SQLite) shared by the reliability tests that
do not hurt it; each test works on its own plan."""

from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from planledger.bench.servers import Replica, author_at, start_replica

ADMIN = "admin-token-for-reliability-tests-0123456789"


@dataclass(frozen=True)
class Served:
    db: str
    url: str
    replica: Replica

    def plan(self, slug: str, count: int, **step: object) -> list[str]:
        """A new plan of `count` steps; their ids in order."""
        return self.plan_of(slug, [{"title": f"step {i}", **step} for i in range(count)])

    def plan_of(self, slug: str, steps: list[dict[str, object]]) -> list[str]:
        """A new plan of these steps; their ids in order."""
        made = httpx.post(f"{self.url}/api/plans", timeout=300, headers=author_at(self.url), json={
            "slug": slug, "title": slug, "steps": steps})
        made.raise_for_status()
        return [str(s["step_id"]) for s in made.json()["steps"]]

    def session(self, name: str) -> tuple[str, httpx.Client]:
        """A new session and a client that acts for it."""
        client = httpx.Client(base_url=self.url, timeout=30)
        started = client.post("/api/sessions", json={"name": name})
        started.raise_for_status()
        client.headers["Authorization"] = f"Bearer {started.json()['token']}"
        return str(started.json()["session_id"]), client


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = str(tmp_path_factory.mktemp("served") / "ledger.sqlite")
    server = start_replica(db, {"PLANLEDGER_ADMIN_TOKEN": ADMIN})
    try:
        yield Served(db, server.url, server)
    finally:
        server.stop()
