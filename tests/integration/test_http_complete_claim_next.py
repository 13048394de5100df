"""A completion that names what it unblocked, and one that claims the next step in the
same call, over a real socket: agents finishing at once each get a different next step,
and a retry under the same idempotency key answers the same next step again."""

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest

from planledger.api.runtime import Runtime
from tests.support.live_server import LiveServer, author, live_server, session


@pytest.fixture
def server(rt: Runtime) -> Iterator[LiveServer]:
    with live_server(rt) as served:
        yield served


def make_plan(server: LiveServer, firsts: int, thens: int) -> tuple[list[str], list[str]]:
    """`firsts` independent steps, then `thens` steps each waiting on all of them."""
    listed = [{"key": f"f{n}", "title": f"first {n}"} for n in range(firsts)]
    listed += [{"title": f"then {n}", "depends_on": [f"f{m}" for m in range(firsts)]}
               for n in range(thens)]
    with server.client() as client:
        made = client.post("/api/plans", headers=author(client),
                           json={"slug": "p", "title": "P", "steps": listed})
    assert made.status_code == 201, made.text
    ids = [s["step_id"] for s in made.json()["steps"]]
    return ids[:firsts], ids[firsts:]


def test_a_completion_names_the_steps_it_unblocked(server: LiveServer) -> None:
    (first,), thens = make_plan(server, 1, 2)
    with server.client() as client:
        _, headers = session(client, "worker")
        client.post(f"/api/steps/{first}/claim", headers=headers)
        done = client.post(f"/api/steps/{first}/complete", headers=headers)
    assert done.json()["unblocked"] == thens
    assert "next" not in done.json()


def test_agents_completing_at_once_each_claim_a_different_next_step(
    server: LiveServer,
) -> None:
    agents = 4
    firsts, _ = make_plan(server, agents, 0)
    with server.client() as client:
        more = [client.post("/api/plans/p/steps", headers=author(client),
                            json={"title": f"more {n}"}).json()["step_id"]
                for n in range(agents)]
        workers = [session(client, f"agent {n}")[1] for n in range(agents)]
        for step, headers in zip(firsts, workers, strict=True):
            assert client.post(f"/api/steps/{step}/claim", headers=headers).status_code == 200
    barrier = Barrier(agents)

    def finish(n: int) -> dict[str, object]:
        with server.client() as client:
            client.get("/healthz")
            barrier.wait(60)
            answer = client.post(f"/api/steps/{firsts[n]}/complete", headers=workers[n],
                                 json={"claim_next": True})
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    with ThreadPoolExecutor(agents) as pool:
        answers = list(pool.map(finish, range(agents)))

    taken = [a["next"]["claimed"]["step_id"] for a in answers]  # type: ignore[index]
    assert sorted(taken) == sorted(more)


def test_a_retry_under_the_same_key_answers_the_same_next_step(server: LiveServer) -> None:
    (first,), (then,) = make_plan(server, 1, 1)
    with server.client() as client:
        _, headers = session(client, "worker")
        client.post(f"/api/steps/{first}/claim", headers=headers)
        keyed = {**headers, "Idempotency-Key": "finish-first-0001"}
        once = client.post(f"/api/steps/{first}/complete", headers=keyed,
                           json={"claim_next": True})
        again = client.post(f"/api/steps/{first}/complete", headers=keyed,
                            json={"claim_next": True})
    assert once.status_code == again.status_code == 200, (once.text, again.text)
    assert once.json() == again.json()
    assert once.json()["next"]["claimed"]["step_id"] == then
