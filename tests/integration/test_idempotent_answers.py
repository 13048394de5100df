"""Idempotent answers kept beside the log, on every backend: a keyed write adds only its own
events to the log; its answer lands in the same transaction or not at all; a retry within
the retention window gets the first answer, one after it is a new request; and a store
whose log already holds answers (written before) keeps replaying them and verifies."""

import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from planledger.api.cli.audit import verify_store
from planledger.api.errors import Replayed
from planledger.api.idempotency import RETENTION_VAR, fingerprint, retention_from_env
from planledger.api.identity import Identity
from planledger.api.runtime import Runtime, open_runtime
from planledger.api.schemas import ClaimOut, SessionStartedOut
from planledger.api.service import Service
from planledger.api.settings import Settings
from planledger.infra.pg_append import ANSWERS_TABLE, APPEND_FUNCTION
from planledger.infra.pg_schema import missing_objects
from planledger.ledger import commands as c
from planledger.ledger.answers import Answer, AnswerRecorded
from planledger.ledger.chain import Verified
from planledger.ledger.domain import errors
from planledger.ledger.storage import postgres_options
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.postgres import BASE_URL, fresh_schema
from tests.support.seed import seed_auth_refresh

HOUR = 3600
TWINS = 6
SECRET = b"one-store-secret-for-these-tests-0123456789"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def rt(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    monkeypatch.setenv(RETENTION_VAR, str(HOUR))
    if request.param == "postgres":
        with fresh_schema() as url:
            runtime = open_runtime(url, clock=clock, ids=SequentialIds(), secret=SECRET)
            yield runtime
            runtime.close()
        return
    db = "memory" if request.param == "memory" else str(tmp_path / "ledger.sqlite")
    runtime = open_runtime(db, clock=clock, ids=SequentialIds())
    yield runtime
    runtime.close()


@pytest.fixture
def service(rt: Runtime) -> Iterator[Service]:
    served = Service(rt, Settings(db=rt.db), Identity(b"s" * 32))
    yield served
    served.waiting.close()


def _log(rt: Runtime) -> list[object]:
    return [event for _, event in rt.store.log_after(0, 100_000)]


def _claim(service: Service, step: str, session: str, key: str) -> ClaimOut:
    return service.answer(c.Claim(step, session, 60), ClaimOut, key)


def test_a_keyed_write_adds_only_its_own_events_to_the_log(
        rt: Runtime, service: Service) -> None:
    steps = seed_auth_refresh(rt.ledger)
    session = rt.ledger.start_session("agent").id
    before = _log(rt)
    first = _claim(service, steps[4], session, "claim-once")
    added = _log(rt)[len(before):]
    assert [type(e).__name__ for e in added] == ["StepClaimed"]
    assert _claim(service, steps[4], session, "claim-once") == first
    assert len(_log(rt)) == len(before) + 1


def test_a_retry_within_the_window_gets_its_first_answer_and_after_it_is_a_new_request(
        rt: Runtime, service: Service, clock: FakeClock) -> None:
    steps = seed_auth_refresh(rt.ledger)
    session = rt.ledger.start_session("agent").id
    first = _claim(service, steps[4], session, "k")
    clock.advance(HOUR - 1)
    assert _claim(service, steps[4], session, "k") == first
    clock.advance(2)
    again = _claim(service, steps[4], session, "k")  # its lease lapsed: claimed anew
    assert again.fence == first.fence + 1 and again.expires_at > first.expires_at


def test_an_expired_answer_leaves_the_store_when_the_next_is_written(
        rt: Runtime, service: Service, clock: FakeClock) -> None:
    service.answer(c.StartSession("one"), SessionStartedOut, "first")
    kept = service.idempotency.stream(None, "first")
    assert rt.store.answer(kept) is not None
    clock.advance(HOUR + 1)
    service.answer(c.StartSession("two"), SessionStartedOut, "second")
    assert rt.store.answer(kept) is None
    assert rt.store.answer(service.idempotency.stream(None, "second")) is not None


def test_a_refusal_before_any_decision_is_kept_alone_and_replayed(
        rt: Runtime, service: Service) -> None:
    session = rt.ledger.start_session("agent").id
    position = rt.store.log_end()
    answers = []
    for _ in range(2):  # the first answer too is given as it was kept
        with pytest.raises(Replayed) as refused:
            _claim(service, "no-such-step", session, "k")
        answers.append((refused.value.status, refused.value.body))
    assert answers[0] == answers[1] and answers[0][0] == 404
    assert rt.store.log_end() == position


def test_a_write_whose_answer_key_is_taken_lands_nothing(
        rt: Runtime, clock: FakeClock) -> None:
    steps = seed_auth_refresh(rt.ledger)
    session = rt.ledger.start_session("agent").id
    taken = Answer("idem:taken", None, "r", 200, {"first": True}, clock.now())
    rt.store.append([taken])
    position = rt.store.log_end()

    def answer_again(outcome: object) -> list[Answer]:
        return [Answer("idem:taken", None, "r", 200, {"first": False}, clock.now(),
                       drops_before=clock.now() - timedelta(hours=1))]

    with pytest.raises(errors.Contention):
        rt.ledger.execute(c.Claim(steps[4], session), answer_again)
    assert rt.store.step(steps[4]).status == "open"
    assert rt.store.log_end() == position
    assert rt.store.answer("idem:taken") == taken


def test_a_store_whose_log_holds_answers_replays_them_and_still_verifies(
        rt: Runtime, service: Service, clock: FakeClock) -> None:
    command = c.StartSession("agent")
    started = service.answer(command, SessionStartedOut)
    stream = service.idempotency.stream(None, "written-before")
    rt.store.append([AnswerRecorded(stream, 1, clock.now(), None, fingerprint(command), 200,
                                    started.model_dump(mode="json"))])
    position = rt.store.log_end()
    assert service.answer(command, SessionStartedOut, "written-before") == started
    assert service.answer(c.StartSession("next"), SessionStartedOut, "new-key")
    verified, finding = verify_store(rt)
    assert isinstance(verified, Verified)
    assert finding is None or finding.intact, finding  # in memory no head is kept: None
    assert rt.store.log_end() == position + 1  # the new session's event, not its answer


def test_racing_twins_of_a_keyed_claim_land_it_once_with_one_answer(
        rt: Runtime, service: Service) -> None:
    steps = seed_auth_refresh(rt.ledger)
    session = rt.ledger.start_session("agent").id
    position = rt.store.log_end()
    together = threading.Barrier(TWINS)
    answers: list[ClaimOut] = []

    def twin() -> None:
        together.wait()
        answers.append(_claim(service, steps[4], session, "racing"))

    threads = [threading.Thread(target=twin) for _ in range(TWINS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == TWINS and all(a == answers[0] for a in answers)
    assert [type(e).__name__ for e in _log(rt)[position:]] == ["StepClaimed"]


def test_a_postgres_schema_made_before_answers_were_kept_beside_the_log_gets_them_on_start(
        clock: FakeClock) -> None:
    with fresh_schema() as url:
        schema = sql.Identifier(postgres_options(url)["schema"])
        with psycopg.connect(BASE_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP FUNCTION {}.{}").format(
                schema, sql.Identifier(APPEND_FUNCTION)))
            conn.execute(sql.SQL("DROP TABLE {}.{}").format(
                schema, sql.Identifier(ANSWERS_TABLE)))
        assert set(missing_objects(url)) == {"append function", "idempotent answers"}
        runtime = open_runtime(url, clock=clock, ids=SequentialIds(), secret=SECRET)
        try:
            served = Service(runtime, Settings(db=url), Identity(b"s" * 32))
            first = served.answer(c.StartSession("a"), SessionStartedOut, "after-upgrade")
            assert served.answer(c.StartSession("a"), SessionStartedOut, "after-upgrade") == first
            served.waiting.close()
        finally:
            runtime.close()
        assert missing_objects(url) == ()


@pytest.mark.parametrize("given", ["", "59", "a day", "-3600"])
def test_a_retention_that_is_no_whole_number_of_at_least_a_minute_is_refused_naming_it(
        given: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RETENTION_VAR, given)
    if not given:  # unset: the default, a day
        assert retention_from_env() == timedelta(days=1)
        return
    with pytest.raises(ValueError, match=RETENTION_VAR):
        retention_from_env()
