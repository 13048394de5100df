"""Path reservations through the MCP tools, on a real `planledger serve` process, through
the official SDK client: steps declare paths, a claim reserves them, a colliding claim is
refused naming holder, step and patterns, tasks_ready puts colliding steps last, and
paths_check answers who holds what."""

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from planledger.bench.servers import Replica, start_replica
from tests.e2e.mcp_agents import agents

AUTH = "internal/auth/**"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replica]:
    replica = start_replica(str(Path(tmp_path_factory.mktemp("mcp-paths")) / "l.sqlite"))
    yield replica
    replica.stop()


def test_a_claim_on_reserved_paths_is_refused_and_agents_see_who_holds_what(
    server: Replica,
) -> None:
    async def story() -> None:
        async with agents([f"{server.url}/mcp"] * 2) as (a, b):
            await a.start()
            await b.start()
            made = await a.ok("plans_create", slug="auth", title="Auth", steps=[
                {"title": "Rotate refresh tokens", "paths": [AUTH]},
                {"title": "Rate-limit refresh", "paths": ["internal/auth/limit.go"]}])
            rotate, limit = (s["step_id"] for s in made["steps"])
            docs = await a.ok("tasks_add", plan="auth", title="Document it",
                              paths=[{"pattern": "docs/", "mode": "shared"}])
            assert docs["paths"] == [{"pattern": "docs/**", "mode": "shared"}]

            held = await b.ok("tasks_claim", step_id=rotate, paths=["go.mod"])
            assert [p["pattern"] for p in held["paths"]] == [AUTH, "go.mod"]
            refusal = await a.refused("tasks_claim", step_id=limit)
            assert refusal.startswith(f'paths reserved: "{AUTH}" held by "{b.session_id}" '
                                      '(agent B, step auth#1 "Rotate refresh tokens")')

            ready = await a.ok("tasks_ready", plan="auth")
            assert [s["step_id"] for s in ready["ready"]] == [docs["step_id"], limit]
            assert ready["ready"][1]["collides_with"][0]["holder"] == b.session_id

            asked = await a.ok("paths_check", files=["internal/auth/token.go", "README.md"])
            assert [(r["holder"], r["step_id"], r["patterns"]) for r in asked["reserved"]] == [
                (b.session_id, rotate, [AUTH])]
            assert (await a.ok("paths_check", paths=["docs/**"]))["reserved"] == []

            moved = await a.ok("tasks_update", step_id=limit, paths=["cmd/limit/"])
            assert moved["paths"] == [{"pattern": "cmd/limit/**", "mode": "exclusive"}]
            assert (await a.ok("tasks_claim", step_id=limit))["paths"][0]["pattern"] == (
                "cmd/limit/**")

    anyio.run(story)
