"""Answer bytes: what `plans_show`'s default page costs an agent, per step.

One `planledger serve` process holds a 2,000-step plan made as plans are: a third of the
steps wait on the first step, a tenth declare paths, and a few are claimed. Its default
page (the first 50 steps) is read in both shapes, from the same server in the same run:
- HTTP `GET /api/plans/{slug}`: every field of every step (`null` and `[]` included),
  the shape scripts and generated clients read. The route answers
  every step; the page's 50 are counted, as the body spells them (compact JSON);
- MCP `plans_show` through the official SDK client at `/mcp`: steps leave out what is
  empty, as the tool's output schema says (api.mcp.lean). Counted as sent: the tool
  result's one JSON text block (its structured content is the same JSON).
The figures are the MCP page's bytes per step, and the whole page, against the HTTP
shape's (lower is better; goal 0.75x, issue 32: what leaving out the empty fields alone
gives, `id` kept beside `step_id` for agents that read it).
"""

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client

from planledger.bench.servers import Agent, Replica, create_plan, start_replica
from planledger.bench.timing import Figure, scratch_dir

GOAL = 0.75
PAGE = 50  # plans_show's default page
SLUG = "big"


def steps_of(count: int) -> list[dict[str, object]]:
    """A plan's steps as planners write them: some wait on the first, some declare paths."""
    steps: list[dict[str, object]] = [{"key": "root", "title": "Lay the groundwork"}]
    for i in range(1, count):
        step: dict[str, object] = {"title": f"Step {i}: change module {i % 37}"}
        if i % 3 == 0:
            step["depends_on"] = ["root"]
        if i % 10 == 0:
            step["paths"] = [f"src/module_{i % 37}/**"]
        steps.append(step)
    return steps


def _claim_a_few(replica: Replica, ids: list[str], count: int) -> None:
    """Claim `count` of the page's ready steps, so the page has holders too."""
    holder = Agent(replica, "holder")
    try:
        for step in [s for i, s in enumerate(ids[1:PAGE], 1) if i % 3 != 0][:count]:
            holder.claim(step).raise_for_status()
    finally:
        holder.close()


def _http_page(url: str) -> dict[str, Any]:
    """The plan as HTTP answers it, cut to the default page."""
    response = httpx.get(f"{url}/api/plans/{SLUG}", timeout=60)
    response.raise_for_status()
    whole: dict[str, Any] = response.json()
    return {**whole, "steps": whole["steps"][:PAGE]}


def compact(answer: Any) -> bytes:
    """JSON as both doors send it: no spaces, text as it is."""
    return json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()


def _mcp_page(url: str) -> tuple[bytes, dict[str, Any]]:
    async def read() -> tuple[bytes, dict[str, Any]]:
        async with Client(f"{url}/mcp", mode="legacy") as client:
            result = await client.call_tool("plans_show", {"plan": SLUG})
        assert not result.is_error and result.structured_content is not None
        text = "".join(getattr(block, "text", "") for block in result.content)
        return text.encode(), result.structured_content

    return anyio.run(read)


def measure(directory: Path, count: int) -> tuple[int, int, int]:
    """(HTTP bytes, MCP bytes, steps on the page) of the plan's default page."""
    server = start_replica(str(directory / "answers.sqlite"),
                           {"PLANLEDGER_MAX_STEPS_PER_REQUEST": str(count)})
    try:
        ids = create_plan(server, SLUG, steps_of(count))
        _claim_a_few(server, ids, 3)
        http = _http_page(server.url)
        mcp, structured = _mcp_page(server.url)
    finally:
        server.stop()
    shown = len(http["steps"])
    assert [s["step_id"] for s in structured["steps"]] == ids[:shown] and shown == PAGE
    return len(compact(http)), len(mcp), shown


def run(smoke: bool = False) -> list[Figure]:
    count = 100 if smoke else 2_000
    with scratch_dir("answer-bytes") as directory:
        http, mcp, shown = measure(directory, count)
    return [
        Figure(f"MCP plans_show, bytes per step ({shown}-step page of {count:,})",
               mcp / shown, "B", "HTTP GET /api/plans/{slug}, bytes per step", http / shown,
               GOAL, lower_is_better=True),
        Figure(f"MCP plans_show, whole default page of {count:,} steps", mcp, "B",
               "HTTP page", http, GOAL, lower_is_better=True),
    ]
