"""The role table, enforced where every door meets the ledger (api.service): a session
acts with its key's role, a revoked key stops it at once, and with no key at all the
store behaves as before keys existed."""

from collections.abc import Iterator

import pytest

from planledger.api.access import new_key
from planledger.api.errors import Unauthorized
from planledger.api.identity import Identity
from planledger.api.runtime import Runtime
from planledger.api.service import Service
from planledger.api.settings import Settings
from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain.access import Role, digest_of
from tests.support import OPERATOR


@pytest.fixture
def served(rt: Runtime) -> Iterator[Service]:
    yield Service(rt, Settings(db=rt.db), Identity(b"s" * 32))


def issue(served: Service, name: str, role: Role) -> str:
    key = new_key()
    served.execute(c.IssueKey(name, role, digest_of(key), OPERATOR))
    return key


def session_as(served: Service, name: str, role: Role) -> str:
    issue(served, name, role)
    started = served.start_session(c.StartSession(name, key=name, role=role))
    return started.session_id


def refused(served: Service, command: c.Command[object]) -> errors.NotPermitted:
    with pytest.raises(errors.NotPermitted) as caught:
        served.execute(command)
    return caught.value


def test_a_worker_claims_and_adds_work_but_does_not_plan(served: Service) -> None:
    planner = session_as(served, "lead", "planner")
    served.execute(c.CreatePlan("p", "P", planner, steps=(c.NewStep("a"), c.NewStep("b"))))
    worker = session_as(served, "bot", "worker")
    step_a, step_b = (s.step_id for s in served.ready("p").ready)

    served.execute(c.Claim(step_a, worker))
    served.execute(c.ReviseStep(step_a, worker, body="what I found"))  # its own step
    served.execute(c.AddStep("p", "found on the way", worker))
    assert refused(served, c.CreatePlan("q", "Q", worker)).needs == "planner"
    assert refused(served, c.ReviseStep(step_b, worker, title="mine now")).needs == "planner"
    assert refused(served, c.Drop(step_b, worker)).needs == "planner"
    assert refused(served, c.AddStep("p", "urgent", worker, priority=0)).needs == "planner"
    assert refused(served, c.DeclareDependencies(step_b, (step_a,), worker)).needs == "planner"
    served.execute(c.Complete(step_a, worker))


def test_only_an_admin_force_releases_and_issues_keys(served: Service) -> None:
    planner = session_as(served, "lead", "planner")
    served.execute(c.CreatePlan("p", "P", planner, steps=(c.NewStep("a"),)))
    step = served.ready("p").ready[0].step_id
    served.execute(c.Claim(step, planner))
    error = refused(served, c.ForceRelease(step, planner))
    assert (error.needs, error.role) == ("admin", "planner")
    assert refused(served, c.IssueKey("x", "admin", digest_of(new_key()), planner)).needs == (
        "admin")
    admin = session_as(served, "root", "admin")
    served.execute(c.ForceRelease(step, admin))


def test_a_reader_key_cannot_start_a_session(served: Service) -> None:
    issue(served, "dash", "reader")
    with pytest.raises(errors.NotPermitted):
        served.start_session(c.StartSession("x", key="dash", role="reader"))


def test_revoking_a_key_stops_its_sessions_at_once(served: Service) -> None:
    worker = session_as(served, "bot", "worker")
    served.execute(c.RevokeKey("bot", OPERATOR))
    with pytest.raises(Unauthorized, match="revoked"):
        served.execute(c.EndSession(worker))


def test_once_a_key_is_live_a_session_started_without_one_stops(served: Service) -> None:
    open_session = served.start_session(c.StartSession("early")).session_id
    served.execute(c.CreatePlan("p", "P", open_session))  # no key yet: as before keys
    issue(served, "lead", "planner")
    with pytest.raises(Unauthorized, match="requires"):
        served.execute(c.CreatePlan("q", "Q", open_session))


@pytest.mark.parametrize("actor", ["01M99KAY8T6SY46MHR20TJCNF0", "garbage"])
def test_a_session_that_does_not_exist_is_said_to_be_unknown_not_a_reader(
    served: Service, actor: str,
) -> None:
    issue(served, "lead", "planner")  # keys exist: an unknown session would act as a reader

    with pytest.raises(errors.UnknownSession) as caught:
        served.execute(c.CreatePlan("q", "Q", actor))

    assert f'session not found: "{actor}"' in str(caught.value)
