"""The misses found by replaying peers' own tests (issue 32), over MCP on a real `planledger
serve` process through the official SDK client: MCP Agent Mail's reservation lifecycle
and mistake detection, beads' reopen of an open issue, and Seamless's unknown id."""

from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from pathlib import Path

import anyio
import pytest

from planledger.bench.servers import Replica, start_replica
from tests.e2e.mcp_agents import Agent, agents

AUTH = "internal/auth/**"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Replica]:
    """A server of its own per test: the reservations one test leaves held stay live."""
    replica = start_replica(str(tmp_path / "l.sqlite"))
    yield replica
    replica.stop()


def _two(server: Replica, story: Callable[[Agent, Agent], Awaitable[None]]) -> None:
    async def run() -> None:
        async with agents([f"{server.url}/mcp"] * 2) as (a, b):
            await a.start()
            await b.start()
            await story(a, b)

    anyio.run(run)


async def _plan(agent: Agent, slug: str, *steps: dict[str, object]) -> list[str]:
    made = await agent.ok("plans_create", slug=slug, title=slug, steps=list(steps))
    return [str(s["step_id"]) for s in made["steps"]]


def test_a_heartbeat_answers_the_reservations_its_claim_still_holds(server: Replica) -> None:
    async def story(a: Agent, b: Agent) -> None:
        (rotate,) = await _plan(a, "hb-paths", {"title": "Rotate", "paths": [AUTH]})
        claimed = await a.ok("tasks_claim", step_id=rotate, paths=["go.mod"])
        beat = await a.ok("tasks_claim", step_id=rotate)
        assert beat["renewed"] is True
        assert beat["paths"] == claimed["paths"] == [
            {"pattern": AUTH, "mode": "exclusive"}, {"pattern": "go.mod", "mode": "exclusive"}]

    _two(server, story)


def test_re_reserving_ones_own_exclusive_pattern_as_shared_shares_it(server: Replica) -> None:
    async def story(a: Agent, b: Agent) -> None:
        rotate, limit = await _plan(a, "downgrade", {"title": "Rotate", "paths": [AUTH]},
                                    {"title": "Limit"})
        await a.ok("tasks_claim", step_id=rotate)
        bounced = await b.refused("tasks_claim", step_id=limit,
                                  paths=[{"pattern": AUTH, "mode": "shared"}])
        assert bounced.startswith(f'paths reserved: "{AUTH}" held by "{a.session_id}"')

        shared = await a.ok("tasks_claim", step_id=rotate,
                            paths=[{"pattern": AUTH, "mode": "shared"}])
        assert shared["paths"] == [{"pattern": AUTH, "mode": "shared"}]
        beside = await b.ok("tasks_claim", step_id=limit,
                            paths=[{"pattern": AUTH, "mode": "shared"}])
        assert beside["paths"] == [{"pattern": AUTH, "mode": "shared"}]
        held = await a.ok("paths_check", files=["internal/auth/token.go"])
        assert sorted(r["holder"] for r in held["reserved"]) == sorted(
            [a.session_id, b.session_id])

    _two(server, story)


def test_a_heartbeat_with_a_shorter_lease_never_moves_the_expiry_earlier(
    server: Replica,
) -> None:
    async def story(a: Agent, b: Agent) -> None:
        (step,) = await _plan(a, "lease", {"title": "Long work"})
        granted = await a.ok("tasks_claim", step_id=step, lease_seconds=600)
        beat = await a.ok("tasks_claim", step_id=step, lease_seconds=5)
        assert beat["renewed"] is True and beat["fence"] == granted["fence"]
        assert datetime.fromisoformat(beat["expires_at"]) >= datetime.fromisoformat(
            granted["expires_at"])
        assert (await b.refused("tasks_claim", step_id=step)).startswith(
            f'task already claimed: held by "{a.session_id}"')

    _two(server, story)


WHOLE = '"**" reserves the whole repository: while a claim holds it, every claim whose paths'


def test_paths_covering_the_whole_repository_are_warned_of_where_they_are_declared(
    server: Replica,
) -> None:
    async def story(a: Agent, b: Agent) -> None:
        made = await a.ok("plans_create", slug="wide", title="Wide", steps=[
            {"title": "Everything", "paths": ["**"]}, {"title": "Docs", "paths": ["docs/"]}])
        assert [w.startswith(f"step wide#1: {WHOLE}") for w in made["warnings"]] == [True]
        everything, docs = made["steps"]
        assert everything["warnings"][0].startswith(WHOLE) and "warnings" not in docs

        added = await a.ok("tasks_add", plan="wide", title="Root files", paths=["*"])
        assert added["warnings"][0].startswith('"*" reserves every file and directory name '
                                               "at the repository root")
        plain = await a.ok("tasks_claim", step_id=added["step_id"])
        assert plain["warnings"][0].startswith('"*" reserves')  # the step's own, claimed
        await a.ok("tasks_release", step_id=added["step_id"])
        claimed = await b.ok("tasks_claim", step_id=docs["step_id"], paths=["**/*"])
        assert claimed["warnings"][0].startswith('"**/*" reserves the whole repository')
        bounced = await a.refused("tasks_claim", step_id=added["step_id"])
        assert bounced.startswith('paths reserved: "docs/**", "**/*" held by')  # as warned

    _two(server, story)


def test_reopening_an_open_step_says_it_is_open_not_claim_it_first(server: Replica) -> None:
    """beads' lifecycle test reopens an open issue: the answer says it is open already."""
    async def story(a: Agent, b: Agent) -> None:
        (step,) = await _plan(a, "reopen", {"title": "Open already"})
        refused = await a.refused("tasks_update", step_id=step, status="open")
        assert refused == f"cannot reopen step {step}: it is open, not done or dropped"
        assert "holder" not in refused and "claim it first" not in refused

    _two(server, story)


def test_an_unknown_step_id_answers_step_not_found_naming_it(server: Replica) -> None:
    """Seamless's server test looks for `not found`."""
    async def story(a: Agent, b: Agent) -> None:
        for tool in ("tasks_claim", "tasks_list", "tasks_complete"):
            said = await a.refused(tool, step_id="01NOSUCHSTEP0000000000000")
            assert said == 'step not found: "01NOSUCHSTEP0000000000000"', (tool, said)

    _two(server, story)
