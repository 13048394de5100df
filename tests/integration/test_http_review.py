"""The review gate over a real socket: a plan that requires reviews, completions that wait
in review, reviewers racing for them, the four-eyes refusals (author and author's key) and
the verdicts, each as a user of the HTTP API sees them."""

from collections.abc import Iterator

import httpx
import pytest

from planledger.api.runtime import Runtime
from planledger.api.settings import Settings
from tests.support.live_server import LiveServer, live_server, post_together

ADMIN_TOKEN = "a-long-enough-admin-token-for-the-review-tests-0123456"


@pytest.fixture
def server(rt: Runtime) -> Iterator[LiveServer]:
    with live_server(rt, Settings(db=rt.db, admin_token=ADMIN_TOKEN)) as served:
        yield served


def issue(server: LiveServer, name: str, role: str) -> str:
    with server.client(ADMIN_TOKEN) as admin:
        made = admin.post("/api/keys", json={"name": name, "role": role})
    assert made.status_code == 201, made.text
    return str(made.json()["key"])


def start(server: LiveServer, key: str, name: str) -> tuple[str, str]:
    """A session started with `key`: its id and token."""
    with server.client(key) as client:
        started = client.post("/api/sessions", json={"name": name})
    assert started.status_code == 201, started.text
    return started.json()["session_id"], started.json()["token"]


def reviewed_plan(server: LiveServer, planner: str, steps: int) -> list[str]:
    """A plan requiring reviews of `steps` steps, then a last one waiting on all of them."""
    _, token = start(server, planner, "planner")
    listed = [{"key": f"s{n}", "title": f"step {n}"} for n in range(steps)]
    listed.append({"title": "release", "depends_on": [f"s{n}" for n in range(steps)]})
    with server.client(token) as client:
        made = client.post("/api/plans", json={"slug": "p", "title": "P", "review": "required",
                                               "steps": listed})
    assert made.status_code == 201, made.text
    assert made.json()["review_required"] is True
    return [s["step_id"] for s in made.json()["steps"]]


def finish(server: LiveServer, token: str, step: str) -> httpx.Response:
    with server.client(token) as worker:
        assert worker.post(f"/api/steps/{step}/claim").status_code == 200
        return worker.post(f"/api/steps/{step}/complete")


def test_a_completion_waits_in_review_shown_apart_and_counted(server: LiveServer) -> None:
    planner, worker = issue(server, "lead", "planner"), issue(server, "bot", "worker")
    steps = reviewed_plan(server, planner, 2)
    _, token = start(server, worker, "author")

    done = finish(server, token, steps[0])

    assert done.status_code == 200 and done.json()["status"] == "in_review"
    with server.client(token) as client:
        ready = client.get("/api/plans/p/ready").json()
        shown = client.get("/api/plans/p").json()
    assert [s["step_id"] for s in ready["in_review"]] == [steps[0]]
    assert ready["in_review_total"] == 1
    assert steps[0] not in [s["step_id"] for s in ready["ready"]]
    assert "1 in review" in ready["progress"]
    first = next(s for s in shown["steps"] if s["step_id"] == steps[0])
    assert first["status"] == "in_review" and shown["review_required"] is True
    assert first["author"] and "reviewer" not in first
    assert "review_required" not in first  # the plan requires it, not the step alone


def test_reviewers_racing_for_reviews_each_get_a_different_step(server: LiveServer) -> None:
    planner, worker = issue(server, "lead", "planner"), issue(server, "bot", "worker")
    reviewers = [issue(server, f"reviewer-{n}", "worker") for n in range(4)]
    steps = reviewed_plan(server, planner, 4)
    _, token = start(server, worker, "author")
    for step in steps[:4]:
        assert finish(server, token, step).json()["status"] == "in_review"
    tokens = [start(server, key, f"reviewer {n}")[1] for n, key in enumerate(reviewers)]

    answers = post_together([server.client(t) for t in tokens], "/api/plans/p/claim-next",
                            json={"review": True})

    claimed = [a.json()["claimed"] for a in answers]
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    assert sorted(c["step_id"] for c in claimed) == sorted(steps[:4])
    assert {c["status"] for c in claimed} == {"in_review"}


def test_the_author_and_its_keys_sessions_are_refused_others_approve(
    server: LiveServer,
) -> None:
    planner, worker = issue(server, "lead", "planner"), issue(server, "bot", "worker")
    reviewer = issue(server, "ann", "worker")
    steps = reviewed_plan(server, planner, 1)
    _, author = start(server, worker, "author")
    _, twin = start(server, worker, "same key")
    finish(server, author, steps[0])

    for token in (author, twin):
        with server.client(token) as client:
            refused = client.post(f"/api/steps/{steps[0]}/review",
                                  json={"verdict": "approve"})
            nothing = client.post("/api/plans/p/claim-next", json={"review": True})
        assert refused.status_code == 403, refused.text
        assert refused.json()["reason"] == "own_work" and "four eyes" in refused.json()["message"]
        assert nothing.json()["claimed"] is None
        assert nothing.json()["reason"] == "none_to_review"
    _, other = start(server, reviewer, "reviewer")
    with server.client(other) as client:
        blocked = client.post(f"/api/steps/{steps[1]}/claim")
        approved = client.post(f"/api/steps/{steps[0]}/review", json={"verdict": "approve"})
        unblocked = client.post(f"/api/steps/{steps[1]}/claim")
        log = client.get("/api/log", params={"limit": 1000}).json()["events"]
    assert blocked.status_code == 409 and blocked.json()["reason"] == "blocked"
    assert approved.json()["status"] == "done"
    assert unblocked.status_code == 200, unblocked.text
    kinds = [e["type"] for e in log]
    assert kinds.count("ReviewRefused") == 2 and kinds.count("StepReviewed") == 1


def test_a_rejection_reopens_with_the_note_for_the_next_claimer(server: LiveServer) -> None:
    planner, worker = issue(server, "lead", "planner"), issue(server, "bot", "worker")
    reviewer = issue(server, "ann", "worker")
    steps = reviewed_plan(server, planner, 1)
    _, author = start(server, worker, "author")
    finish(server, author, steps[0])
    _, other = start(server, reviewer, "reviewer")

    with server.client(other) as client:
        rejected = client.post(f"/api/steps/{steps[0]}/review", json={
            "verdict": "reject", "note": "no test covers the expired token"})
        again = client.post(f"/api/steps/{steps[0]}/review", json={"verdict": "approve"})
    with server.client(author) as client:
        reclaimed = client.post(f"/api/steps/{steps[0]}/claim")

    assert rejected.json()["status"] == "open"
    assert again.status_code == 409 and again.json()["reason"] == "not_in_review"
    assert "it is open, not in review" in again.json()["message"]
    assert [n["text"] for n in reclaimed.json()["notes"]] == ["no test covers the expired token"]


@pytest.mark.parametrize("body", [{}, {"verdict": "lgtm"}, {"verdict": "approve", "note": 5}])
def test_a_malformed_review_is_a_422_naming_the_field(server: LiveServer,
                                                      body: dict[str, object]) -> None:
    planner = issue(server, "lead", "planner")
    steps = reviewed_plan(server, planner, 1)
    _, token = start(server, planner, "someone")
    with server.client(token) as client:
        refused = client.post(f"/api/steps/{steps[0]}/review", json=body)
    assert refused.status_code == 422, refused.text
