"""The review gate through the official MCP SDK client over streamable HTTP: an author's
completion waits in review, the author is refused as its reviewer, two reviewers racing
tasks_claim_next(review=true) get different steps, approve unblocks and reject reopens
with the note, and a review of a step not in review is refused naming its status."""

from collections.abc import Awaitable, Callable, Iterator

import anyio
import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.api.settings import Settings
from tests.e2e.mcp_agents import Agent, agents, together
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import LiveServer, live_server


@pytest.fixture
def server(clock: FakeClock) -> Iterator[LiveServer]:
    runtime: Runtime = open_runtime("memory", clock=clock, ids=SequentialIds())
    with live_server(runtime, Settings(db="memory"), lifespan="on") as live:
        yield live
    runtime.close()


def run(server: LiveServer, story: Callable[[list[Agent]], Awaitable[None]]) -> None:
    async def main() -> None:
        async with agents([f"{server.url}/mcp"] * 3) as crew:
            for agent in crew:
                await agent.start()
            await story(list(crew))

    anyio.run(main)


async def submitted(author: Agent, count: int) -> list[str]:
    """A plan requiring reviews: `count` steps the author completes, then one waiting on
    them all; the ids, in plan order."""
    steps: list[object] = [{"key": f"s{n}", "title": f"step {n}"} for n in range(count)]
    steps.append({"title": "release", "depends_on": [f"s{n}" for n in range(count)]})
    made = await author.ok("plans_create", plan="p", title="Reviewed", steps=steps,
                           review="required")
    ids = [str(s["step_id"]) for s in made["steps"]]
    for step in ids[:count]:
        await author.ok("tasks_claim", step_id=step)
        assert (await author.ok("tasks_complete", step_id=step))["status"] == "in_review"
    return ids


def test_the_author_is_refused_and_another_agents_approval_unblocks(server: LiveServer) -> None:
    async def story(crew: list[Agent]) -> None:
        author, reviewer, _ = crew
        ids = await submitted(author, 1)
        refused = await author.refused("tasks_review", step_id=ids[0], verdict="approve")
        assert "four eyes" in refused
        nothing = await author.ok("tasks_claim_next", plan="p", review=True)
        assert (nothing["claimed"], nothing["reason"]) == (None, "none_to_review")
        taken = await reviewer.ok("tasks_claim_next", plan="p", review=True)
        assert taken["claimed"]["step_id"] == ids[0]
        assert taken["claimed"]["status"] == "in_review"
        approved = await reviewer.ok("tasks_review", step_id=ids[0], verdict="approve")
        assert approved["status"] == "done" and approved["progress"].startswith("1/2 done")
        assert (await author.ok("tasks_claim", step_id=ids[1]))["step_id"] == ids[1]

    run(server, story)


def test_two_reviewers_racing_for_reviews_get_different_steps(server: LiveServer) -> None:
    async def story(crew: list[Agent]) -> None:
        author, first, second = crew
        ids = await submitted(author, 2)
        answers = await together(first.ok("tasks_claim_next", plan="p", review=True),
                                 second.ok("tasks_claim_next", plan="p", review=True))
        taken = sorted(a["claimed"]["step_id"] for a in answers)
        assert taken == sorted(ids[:2])

    run(server, story)


def test_a_rejection_reopens_the_step_with_the_reviewers_note(server: LiveServer) -> None:
    async def story(crew: list[Agent]) -> None:
        author, reviewer, _ = crew
        ids = await submitted(author, 1)
        rejected = await reviewer.ok("tasks_review", step_id=ids[0], verdict="reject",
                                     note="the limiter is still in memory")
        assert rejected["status"] == "open"
        again = await reviewer.refused("tasks_review", step_id=ids[0], verdict="approve")
        assert "it is open, not in review" in again
        grant = await author.ok("tasks_claim", step_id=ids[0])
        assert [n["text"] for n in grant["notes"]] == ["the limiter is still in memory"]

    run(server, story)


def test_the_tools_schemas_say_what_a_review_takes(server: LiveServer) -> None:
    async def story(crew: list[Agent]) -> None:
        listed = await crew[0].client.list_tools()
        tools = {t.name: t for t in listed.tools}
        verdict = tools["tasks_review"].input_schema["properties"]["verdict"]
        assert verdict["enum"] == ["approve", "reject"]
        assert "review" in tools["tasks_claim_next"].input_schema["properties"]
        assert "review" in tools["plans_create"].input_schema["properties"]

    run(server, story)
