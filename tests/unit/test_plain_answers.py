"""The plain fields of a ready list and of the plans (api.plain_answers, which the embedded
command line prints without the schemas) are what their schemas dump: every field, in the
schema's order, with the same values, and the same JSON text as the full command line
writes (api.cli.common.emit: `json.dumps(model_dump(mode="json"), indent=2)`)."""

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel

from planledger.api import plain_answers
from planledger.api.cli.calls import _json_moment
from planledger.api.runtime import Runtime
from planledger.api.schemas import PlanSummaryOut, ReadyOut
from planledger.ledger import commands as c
from planledger.ledger.commands import NewStep
from planledger.ledger.domain.ids import SessionId, StepId
from planledger.ledger.domain.paths import PathSpec
from tests.support.fakes import FakeClock

OPERATOR = "local:test"


def _steps() -> tuple[NewStep, ...]:
    return (
        NewStep("Rotate refresh tokens", key="rotate", paths=(PathSpec("internal/auth/**"),)),
        NewStep("Rate-limit refresh", key="limit", priority=0, paths=(
            PathSpec("internal/auth/limit.go"), PathSpec("docs/", "shared"))),
        NewStep("Document it", key="docs", body="see the README",
                paths=(PathSpec("docs/", "shared"),)),
        NewStep("Roll out", key="rollout", depends_on=("rotate", "docs")),
        NewStep("Lapses", key="lapses", priority=1),
        NewStep("Done", key="done"),
        NewStep("Dropped", key="dropped", priority=4),
    )


def _scene(runtime: Runtime, clock: FakeClock) -> tuple[dict[str, StepId], SessionId,
                                                         SessionId]:
    """A plan with every kind of step: held (its paths reserved), claimable and colliding
    with that reservation, blocked, claimable after a lapse, done and dropped; another
    plan, finished. Its steps by key, and the two sessions."""
    ledger = runtime.ledger
    a, b = ledger.start_session("agent A").id, ledger.start_session(None).id
    made = ledger.execute(c.CreatePlan("auth", "Auth", OPERATOR,
                                       (("tests-first", "write the test first"),), _steps()))
    steps = dict(zip(made.keys, made.step_ids, strict=True))
    ledger.claim(steps["lapses"], a, lease_seconds=60)
    ledger.claim(steps["done"], a)
    ledger.complete(steps["done"], a)
    ledger.drop(steps["dropped"], OPERATOR)
    clock.advance(120)  # the lapsing claim's lease runs out
    ledger.claim(steps["rotate"], b, paths=[PathSpec("go.mod")])
    _, (only,) = ledger.create_plan("small", "Small", steps=[NewStep("all of it")],
                                    actor=OPERATOR)
    ledger.claim(only, a)
    ledger.complete(only, a)
    return steps, a, b


def _same(schema: type[BaseModel], fields: Any) -> None:
    made = schema.model_validate(fields)
    assert made.model_dump() == fields
    assert list(made.model_dump()) == list(fields)  # the schema's order
    assert (json.dumps(made.model_dump(mode="json"), indent=2)
            == json.dumps(fields, indent=2, default=_json_moment))


def test_a_ready_list_is_what_its_schema_dumps(runtime: Runtime, clock: FakeClock) -> None:
    steps, a, b = _scene(runtime, clock)
    shown = plain_answers.ready(runtime, "auth")
    assert ([s["step_id"] for s in shown["ready"]]
            == [steps["lapses"], steps["docs"], steps["limit"]])  # colliding last
    assert shown["ready"][0]["lapsed_holder"] == a
    assert shown["ready"][2]["collides_with"][0]["holder"] == b
    assert shown["held"][0]["reserved"] and shown["held"][0]["expires_at"] is not None
    assert shown["blocked"][0]["blockers"]
    _same(ReadyOut, shown)
    for asker in (a, b):
        _same(ReadyOut, plain_answers.ready(runtime, "auth", asker=asker))
    _same(ReadyOut, plain_answers.ready(runtime, "auth", limit=1))
    _same(ReadyOut, plain_answers.ready(runtime, "auth", listed=[steps["limit"]],
                                        asker=a))
    _same(ReadyOut, plain_answers.ready(runtime, "small"))


def test_the_plans_are_what_their_schema_dumps(runtime: Runtime, clock: FakeClock) -> None:
    _scene(runtime, clock)
    found = plain_answers.plans(runtime)
    assert [p["slug"] for p in found] == ["auth", "small"]
    for fields in found:
        _same(PlanSummaryOut, fields)


def test_moments_are_written_as_pydantics_json() -> None:
    class Moment(BaseModel):
        at: datetime

    for moment in (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
                   datetime(2026, 1, 2, 3, 4, 5, 120, tzinfo=UTC),
                   datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=timezone(timedelta(hours=2))),
                   datetime(2026, 1, 2, 3, 4, 5)):
        assert json.dumps(Moment(at=moment).model_dump(mode="json")["at"]) == json.dumps(
            moment, default=_json_moment)
