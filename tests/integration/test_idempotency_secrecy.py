"""Idempotency keys that give nothing away: the key a key's answer is kept under is a MAC
under the store's secret (whoever reads the store could match a bare hash of the key
offline against guessed keys), and a replayed session start, whoever sends it,
carries the session's id but never its token."""

import hashlib
import sqlite3
from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from planledger.api.http.app import create_app
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.schemas import TOKEN_ONLY_FIRST
from planledger.api.settings import Settings
from planledger.infra.sqlite_answers import ANSWERS_TABLE
from tests.support import LOCAL
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.live_server import live_server, post_together

SECRET = b"one-store-secret-for-these-tests-0123456789"


def _client(runtime: Runtime) -> TestClient:
    return TestClient(create_app(runtime, Settings(db=runtime.db)), base_url=LOCAL)


def _idempotency_streams(runtime: Runtime) -> set[str]:
    """The keys answers are kept under, as stored."""
    with sqlite3.connect(runtime.db) as store:
        return {str(row[0]) for row in store.execute(f"SELECT key FROM {ANSWERS_TABLE}")}


def _start(client: TestClient, key: str, name: str = "agent A") -> httpx.Response:
    return client.post("/api/sessions", json={"name": name},
                       headers={"Idempotency-Key": key})


def test_the_stream_of_a_key_cannot_be_found_by_hashing_guessed_keys(
    file_runtime: Runtime,
) -> None:
    client = _client(file_runtime)
    assert _start(client, "retry-1").status_code == 201
    (stream,) = _idempotency_streams(file_runtime)
    guessed = {hashlib.sha256(f"{scope}\n{key}".encode()).hexdigest()[:48]
               for scope in ("-", "") for key in ("retry-1", "retry-2")}
    assert stream.removeprefix("idem:") not in guessed


def test_the_same_key_names_different_streams_under_different_secrets(
    tmp_path: Path, clock: FakeClock,
) -> None:
    streams = []
    for name, secret in (("one", SECRET), ("two", SECRET[::-1])):
        runtime = open_runtime(str(tmp_path / f"{name}.sqlite"), clock=clock,
                               ids=SequentialIds(), secret=secret)
        try:
            client = _client(runtime)
            _start(client, "retry-1")
            streams.append(_idempotency_streams(runtime))
        finally:
            runtime.close()
    assert streams[0] and streams[1] and streams[0] != streams[1]


def test_a_replayed_session_start_answers_the_session_without_its_token(
    file_runtime: Runtime,
) -> None:
    client = _client(file_runtime)
    first = _start(client, "start-once")
    replay = _start(client, "start-once")  # a retry, or a stranger who learnt the key
    assert first.status_code == replay.status_code == 201
    assert first.json()["token"] and first.json()["replayed"] is False
    body = replay.json()
    assert body["session_id"] == first.json()["session_id"]
    assert (body["token"], body["replayed"], body["note"]) == (None, True, TOKEN_ONLY_FIRST)
    assert first.json()["token"] not in replay.text


def test_of_concurrent_twins_of_a_session_start_only_one_gets_the_token(
    file_runtime: Runtime,
) -> None:
    with live_server(file_runtime) as server:
        clients = [server.client() for _ in range(6)]
        answers = post_together(clients, "/api/sessions", {"Idempotency-Key": "twins"})
    assert {a.status_code for a in answers} == {201}
    assert len({a.json()["session_id"] for a in answers}) == 1
    tokens = [a.json()["token"] for a in answers if a.json()["token"] is not None]
    assert len(tokens) == 1
