"""The server killed with SIGKILL in the middle of load and started again on the same store:
every write acknowledged before the kill is in the log, nothing is half-written, the read
models rebuild to the state the restarted server serves, and clients retrying with their
idempotency keys get their first answers (and writes that were in flight land once)."""

import sqlite3
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from planledger.api.cli.audit import store_entries
from planledger.api.runtime import open_runtime
from planledger.bench.servers import Replica, author_at, start_replica
from planledger.ledger.chain import Verified, verify
from planledger.ledger.domain import events as ev
from planledger.projections.readmodel import ReadModel

CLIENTS = 4
STEPS = 300
ACKS_BEFORE_KILL = 40
DEADLINE = 60.0


@dataclass
class Sent:
    """One idempotent write: where it went, its key, and its first answer (None: the
    answer was lost in the crash)."""

    path: str
    body: dict[str, Any]
    key: str
    answer: tuple[int, Any] | None = None


@dataclass
class Client:
    token: str
    session: str
    sent: list[Sent] = field(default_factory=list)

    def send(self, http: httpx.Client, path: str, body: dict[str, Any]) -> Sent:
        sent = Sent(path, body, str(uuid.uuid4()))
        self.sent.append(sent)
        answer = http.post(path, json=body, headers=self._headers(sent.key))
        sent.answer = (answer.status_code, answer.json())
        return sent

    def _headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "Idempotency-Key": key}

    def retry(self, url: str) -> list[tuple[Sent, tuple[int, Any]]]:
        with httpx.Client(base_url=url, timeout=30) as http:
            return [(s, _answer(http.post(s.path, json=s.body, headers=self._headers(s.key))))
                    for s in self.sent]


def _answer(response: httpx.Response) -> tuple[int, Any]:
    return response.status_code, response.json()


def _work(client: Client, url: str, stop: threading.Event) -> None:
    """Claim-next and complete, each with an idempotency key, until the server dies."""
    with httpx.Client(base_url=url, timeout=30) as http:
        try:
            while not stop.is_set():
                got = client.send(http, "/api/plans/crash/claim-next", {"lease_seconds": 60})
                claimed = got.answer and got.answer[0] == 200 and got.answer[1]["claimed"]
                if claimed:
                    client.send(http, f"/api/steps/{claimed['step_id']}/complete",
                                {"fence": claimed["fence"]})
        except httpx.TransportError:
            return  # killed: the last request's answer is lost


def _acked(clients: list[Client]) -> int:
    return sum(1 for c in clients for s in c.sent if s.answer and "complete" in s.path)


@pytest.mark.slow
def test_a_killed_server_restarts_with_every_acknowledged_write_and_first_answers(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "ledger.sqlite")
    server = start_replica(db)
    try:
        clients = _load_until_killed(server)
    finally:
        server.stop()
    events = _log(db)
    _every_acknowledged_write_is_logged(clients, events)
    _nothing_half_written(db, events)

    again = start_replica(db)
    try:
        _read_models_rebuild_to_what_is_served(db, again.url)
        _retries_get_their_first_answers(clients, again.url)
    finally:
        again.stop()
    completed = Counter(e.originator_id for e in _log(db) if isinstance(e, ev.StepCompleted))
    assert completed and max(completed.values()) == 1


def _load_until_killed(server: Replica) -> list[Client]:
    made = httpx.post(f"{server.url}/api/plans", timeout=60, headers=author_at(server.url), json={
        "slug": "crash", "title": "crash", "steps": [{"title": f"s{i}"} for i in range(STEPS)]})
    made.raise_for_status()
    clients = []
    for i in range(CLIENTS):
        started = httpx.post(f"{server.url}/api/sessions", json={"name": f"c{i}"}).json()
        clients.append(Client(started["token"], started["session_id"]))
    stop = threading.Event()
    threads = [threading.Thread(target=_work, args=(c, server.url, stop)) for c in clients]
    for t in threads:
        t.start()
    deadline = time.monotonic() + DEADLINE
    while _acked(clients) < ACKS_BEFORE_KILL:  # polling with a deadline: load to build up
        assert time.monotonic() < deadline, "the load never got going"
        time.sleep(0.02)
    server.kill()  # SIGKILL: mid-request, mid-transaction
    stop.set()
    for t in threads:
        t.join(DEADLINE)
    assert any(s.answer is None for c in clients for s in c.sent), "nothing was in flight"
    return clients


def _log(db: str) -> list[ev.LedgerEvent]:
    runtime = open_runtime(db)
    try:
        notes = runtime.store.recorder.select_notifications(0, 10**6, inclusive_of_start=False)
        return [e for n in notes if isinstance(e := runtime.store.mapper.to_domain_event(n),
                                               ev.LedgerEvent)]
    finally:
        runtime.close()


def _every_acknowledged_write_is_logged(clients: list[Client],
                                        events: list[ev.LedgerEvent]) -> None:
    claimed = {(e.originator_id, e.session_id, e.fence) for e in events
               if isinstance(e, ev.StepClaimed)}
    completed = {(e.originator_id, e.session_id, e.fence) for e in events
                 if isinstance(e, ev.StepCompleted)}
    for client in clients:
        for sent in client.sent:
            if sent.answer is None or sent.answer[0] != 200:
                continue
            if "claim-next" in sent.path:
                c = sent.answer[1]["claimed"]
                assert (c["step_id"], client.session, c["fence"]) in claimed, sent
            else:
                step = sent.path.split("/")[3]
                assert (step, client.session, sent.body["fence"]) in completed, sent


def _nothing_half_written(db: str, events: list[ev.LedgerEvent]) -> None:
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    runtime = open_runtime(db)
    try:
        assert isinstance(verify(store_entries(runtime.store)), Verified)
    finally:
        runtime.close()
    for step in {e.originator_id for e in events if isinstance(e, ev.StepOpened)}:
        versions = [e.originator_version for e in events if e.originator_id == step]
        assert versions == list(range(1, len(versions) + 1))


def _read_models_rebuild_to_what_is_served(db: str, url: str) -> None:
    served = httpx.get(f"{url}/api/plans/crash", timeout=30).json()
    runtime = open_runtime(db)
    try:
        rebuilt = ReadModel(runtime.store, runtime.ledger.clock)
        rebuilt.catch_up()
        assert served["progress"]["done"] == rebuilt.progress("crash").done  # type: ignore[arg-type]
        for step in served["steps"]:
            state = rebuilt.steps[step["step_id"]]
            assert (step["status"], step["fence"]) == (state.status, state.fence)
    finally:
        runtime.close()


def _retries_get_their_first_answers(clients: list[Client], url: str) -> None:
    lost = 0
    for client in clients:
        for sent, again in client.retry(url):
            if sent.answer is not None:
                assert again == sent.answer, (sent, again)
            else:
                lost += 1
                assert again[0] in (200, 409), again
    assert lost >= 1
    print(f"crash: {sum(len(c.sent) for c in clients)} idempotent writes, {lost} in flight "
          "at the kill, all retried to their first answers")
