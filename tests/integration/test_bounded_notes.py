"""Notes make answers of a bounded size, over a real socket: at most MAX_WAITING_NOTES
notes wait for a step's next claimer (the next is refused, 422, naming the limit; the
note a holder leaves as it lets go is still taken), and the claim's answer carries the
newest of them within HANDED_NOTES and HANDED_CHARACTERS, counting the rest in
`notes_left_out`; the log and the plan's timeline keep every one."""

from datetime import UTC, datetime

import httpx

from planledger.api.runtime import Runtime
from planledger.ledger.domain.closing import (
    HANDED_CHARACTERS,
    HANDED_NOTES,
    MAX_WAITING_NOTES,
    handed_notes,
)
from planledger.ledger.domain.plans import MAX_BODY
from planledger.ledger.domain.state import Note
from tests.support.live_server import live_server


def started(client: httpx.Client, name: str) -> dict[str, str]:
    made = client.post("/api/sessions", json={"name": name})
    assert made.status_code == 201, made.text
    return {"Authorization": f"Bearer {made.json()['token']}"}


def test_waiting_notes_are_capped_and_a_claim_answer_is_bounded(rt: Runtime) -> None:
    with live_server(rt) as server, server.client() as client:
        writer, claimer = started(client, "writer"), started(client, "claimer")
        assert client.post("/api/plans", headers=writer, json={
            "slug": "p", "title": "P", "steps": [{"title": "a"}]}).status_code == 201
        step = client.get("/api/plans/p/ready").json()["ready"][0]["step_id"]
        for n in range(MAX_WAITING_NOTES):
            text = f"note {n} " + "x" * (MAX_BODY - 12)
            added = client.post(f"/api/steps/{step}/notes", headers=writer, json={"text": text})
            assert added.status_code == 201, added.text
        over = client.post(f"/api/steps/{step}/notes", headers=writer, json={"text": "one more"})
        assert over.status_code == 422 and "limit" in over.json()["message"], over.text

        claimed = client.post(f"/api/steps/{step}/claim", headers=claimer)
        assert claimed.status_code == 200, claimed.text
        answer = claimed.json()
        handed = [note["text"].split(" ")[1] for note in answer["notes"]]
        assert handed == [str(n) for n in range(MAX_WAITING_NOTES - 2, MAX_WAITING_NOTES)]
        assert answer["notes_left_out"] == MAX_WAITING_NOTES - 2
        assert len(claimed.content) < HANDED_CHARACTERS + 10_000

        released = client.post(f"/api/steps/{step}/release", headers=claimer,
                               json={"note": "gave up: the notes say it all"})
        assert released.status_code == 200, released.text
        logged = client.get("/api/log", params={"limit": 1000}).json()["events"]
        assert sum(e["type"] == "StepNoted" for e in logged) == MAX_WAITING_NOTES + 1


def note(text: str) -> Note:
    return Note(by="S", at=datetime(2026, 1, 1, tzinfo=UTC), text=text)


def test_the_newest_note_is_handed_whatever_its_size() -> None:
    small = [note(f"small {n}") for n in range(3 * HANDED_NOTES)]
    kept, left_out = handed_notes(small)
    assert [n.text for n in kept] == [f"small {n}" for n in range(2 * HANDED_NOTES,
                                                                   3 * HANDED_NOTES)]
    assert left_out == 2 * HANDED_NOTES
    big = note("y" * (HANDED_CHARACTERS + 1))
    assert handed_notes([*small, big]) == ((big,), len(small))
    assert handed_notes([]) == ((), 0)
