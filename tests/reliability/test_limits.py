"""Limits with clear errors (body size, title and body length, dependency count, steps per
plan), odd text kept exactly or refused by name, and big shapes that must simply work: a
chain of 10,000 steps in a line, a fan of 2,000 steps on one root, a step waiting on 200.
Cycles are refused, naming the cycle, however long it is."""

import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from urllib.parse import urlparse

import httpx
import pytest

from planledger.api.http.limits import MAX_BODY_BYTES
from planledger.api.settings import MAX_STEPS_SETTING
from planledger.bench.servers import author_at, start_replica
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug, StepId
from planledger.ledger.domain.plans import (
    MAX_BODY,
    MAX_DEPENDENCIES,
    MAX_STEPS_PER_PLAN,
    MAX_TITLE,
    decide_add_step,
)
from planledger.ledger.domain.state import PlanState, StepDef
from tests.reliability.conftest import Served
from tests.support import OPERATOR
from tests.support.live_server import author


@pytest.fixture(scope="module")
def roomy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server whose cap on steps per request admits the large plans made here."""
    db = str(tmp_path_factory.mktemp("roomy") / "ledger.sqlite")
    server = start_replica(db, {MAX_STEPS_SETTING: str(CHAIN + FAN)})
    try:
        yield Served(db, server.url, server)
    finally:
        server.stop()


CHAIN = 10_000
FAN = 2_000


def _invalid(answer: httpx.Response, field: str) -> None:
    assert answer.status_code == 422, answer.text
    assert field in answer.json()["message"], answer.json()


def test_a_body_over_the_limit_is_refused_before_it_is_read(served: Served) -> None:
    url = urlparse(served.url)
    answer: bytes | str
    with socket.create_connection((url.hostname, url.port), timeout=10) as raw:
        raw.sendall(b"POST /api/plans HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                    b"\r\nContent-Length: 10000000000\r\n\r\n")
        answer = b""
        while chunk := raw.recv(4096):  # until the server closes the connection
            answer += chunk
        answer = answer.decode()
    assert answer.startswith("HTTP/1.1 413") and '"reason": "body_too_large"' in answer

    def streamed() -> object:  # no Content-Length: chunked, and counted as it arrives
        chunk = b" " * (1024 * 1024)
        for _ in range(MAX_BODY_BYTES // len(chunk) + 2):
            yield chunk

    answer2 = httpx.post(f"{served.url}/api/plans", content=streamed(), timeout=60,  # type: ignore[arg-type]
                         headers={"Content-Type": "application/json"})
    assert answer2.status_code == 413 and "the limit is" in answer2.json()["message"]


def test_text_limits_are_refused_naming_the_field(served: Served) -> None:
    client = httpx.Client(base_url=served.url, timeout=30)
    client.headers.update(author(client))
    post = client.post
    _invalid(post("/api/plans", json={"slug": "t1", "title": "x" * (MAX_TITLE + 1)}), "title")
    _invalid(post("/api/plans", json={"slug": "t2", "title": "t", "steps": [
        {"title": "s", "body": "b" * (MAX_BODY + 1)}]}), "body")
    _invalid(post("/api/plans", json={"slug": "t3", "title": "bell \x07"}), "control")
    _invalid(post("/api/plans", json={"slug": "../etc", "title": "t"}), "slug")
    lone = b'{"slug": "t4", "title": "\\ud800"}'  # a lone surrogate, escaped in JSON
    assert post("/api/plans", content=lone).status_code == 422
    (step,) = served.plan("limits-deps", 1)
    _invalid(post("/api/plans/limits-deps/steps", json={
        "title": "many", "depends_on": [step] * 2 + [f"x{i}" for i in range(MAX_DEPENDENCIES)]}),
        "depends_on")
    assert httpx.get(f"{served.url}/api/plans/t1").status_code == 404  # nothing half-made


def test_unicode_is_kept_exactly(served: Served) -> None:
    title = "Ünïcödé ✓ 日本語 עברית e\u0301 👩‍💻 \u200b one line"  # a title is one line
    body = f"{title} tab\tand\nnewline" * 10  # a body keeps tabs and line breaks
    made = httpx.post(f"{served.url}/api/plans", timeout=30, headers=author_at(served.url), json={
        "slug": "unicode", "title": title, "steps": [{"title": title, "body": body}]})
    assert made.status_code == 201, made.text
    shown = httpx.get(f"{served.url}/api/plans/unicode", timeout=30).json()
    assert shown["title"] == title and shown["steps"][0]["title"] == title
    assert shown["steps"][0]["body"] == body


def test_steps_per_plan_are_capped_naming_the_limit() -> None:
    now = datetime.now(UTC)
    full = PlanState("plan:big", 1, PlanSlug("big"), "big", {}, now, {
        StepId(f"s{i}"): StepDef(StepId(f"s{i}"), i, "t", "", (), now)
        for i in range(MAX_STEPS_PER_PLAN)})
    with pytest.raises(errors.InvalidInput, match=f"has the limit of {MAX_STEPS_PER_PLAN} steps"):
        decide_add_step(full, 2, StepId("one-more"), "t", "", [], OPERATOR, now)


@pytest.mark.slow
def test_a_chain_of_ten_thousand_steps_works_and_closing_it_into_a_cycle_is_refused(
    roomy: Served,
) -> None:
    served = roomy
    started = time.monotonic()
    steps = served.plan_of("chain", [{"key": str(i), "title": f"link {i}",
                                      "depends_on": [str(i - 1)] if i else []}
                                     for i in range(CHAIN)])
    made = time.monotonic() - started
    _, agent = served.session("chain walker")
    ready = agent.get("/api/plans/chain/ready").json()
    assert [s["step_id"] for s in ready["ready"]] == [steps[0]]
    assert len(ready["blocked"]) == CHAIN - 1
    for step in steps[:3]:
        fence = agent.post(f"/api/steps/{step}/claim").json()["fence"]
        assert agent.post(f"/api/steps/{step}/complete", json={"fence": fence}).is_success
    assert [s["step_id"] for s in agent.get("/api/plans/chain/ready").json()["ready"]] == [
        steps[3]]
    cycle = agent.post(f"/api/steps/{steps[3]}/dependencies", json={"depends_on": [steps[-1]]})
    _invalid(cycle, "dependency cycle")
    assert cycle.json()["message"].count(" -> ") == CHAIN - 3
    assert made < 120, f"creating the chain took {made:.0f}s"


@pytest.mark.slow
def test_a_wide_fan_and_a_step_waiting_on_the_most_dependencies_work(roomy: Served) -> None:
    served = roomy
    steps = served.plan_of("fan", [{"key": "root", "title": "root"}, *[
        {"title": f"leaf {i}", "depends_on": ["root"]} for i in range(FAN)]])
    waits = httpx.post(f"{served.url}/api/plans/fan/steps", timeout=30,
                       headers=author_at(served.url), json={
        "title": "fan-in", "depends_on": steps[1:MAX_DEPENDENCIES + 1]})
    assert waits.status_code == 201, waits.text
    _, agent = served.session("fan")
    fence = agent.post(f"/api/steps/{steps[0]}/claim").json()["fence"]
    assert agent.post(f"/api/steps/{steps[0]}/complete", json={"fence": fence}).is_success
    ready = agent.get("/api/plans/fan/ready").json()["ready"]
    assert [s["step_id"] for s in ready] == steps[1:]
