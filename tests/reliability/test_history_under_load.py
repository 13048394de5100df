"""Agents in separate processes drive a real `planledger serve` (SQLite, and two replicas on
one PostgreSQL): claims, heartbeats, completions, releases, session ends, lapses from short
leases, answers lost to timeouts. The history they saw holds no violation of the lease
model, it agrees with the log, and the log's hash chain is whole."""

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace

import httpx
import pytest

from planledger.api.cli.audit import store_entries
from planledger.api.runtime import open_runtime
from planledger.bench.servers import author_at, replicas
from planledger.ledger.chain import Verified, verify
from planledger.ledger.domain import events as ev
from tests.reliability.agents import run_agents
from tests.reliability.conftest import Served
from tests.reliability.history import Call, check, describe
from tests.support.postgres import fresh_schema

AGENTS = 6
SECONDS = 5.0
STEPS = 8


@dataclass(frozen=True)
class Run:
    db: str
    history: list[Call]


def _run(db: str, urls: list[str]) -> Run:
    steps = _create_plan(urls[0], "contended", STEPS)
    return Run(db, run_agents(urls, steps, AGENTS, SECONDS))


@pytest.fixture(scope="module")
def sqlite_run(served: Served) -> Run:
    return _run(served.db, [served.url])


@pytest.fixture(params=["sqlite", "postgres-2-replicas"])
def run(request: pytest.FixtureRequest, sqlite_run: Run) -> Iterator[Run]:
    """A history of agents spread over one server (SQLite) or two replicas (PostgreSQL)."""
    if request.param == "sqlite":
        yield sqlite_run
        return
    with fresh_schema() as url, replicas(url, 2) as pair:
        yield _run(url, [r.url for r in pair])


def _events(db: str) -> tuple[list[ev.LedgerEvent], object]:
    runtime = open_runtime(db)
    try:
        chain = verify(store_entries(runtime.store))
        notes = runtime.store.recorder.select_notifications(start=0, limit=10**6,
                                                            inclusive_of_start=False)
        decoded = [runtime.store.mapper.to_domain_event(n) for n in notes]
        return [e for e in decoded if isinstance(e, ev.LedgerEvent)], chain
    finally:
        runtime.close()


@pytest.mark.slow
def test_agents_in_processes_leave_a_history_with_no_violation(run: Run) -> None:
    history = run.history

    violations = check(history)
    assert not violations, describe(violations)

    outcomes = Counter((c.op, c.outcome) for c in history)
    print(f"history: {len({c.agent for c in history})} sessions of {AGENTS} agent processes, "
          f"{len(history)} calls, 0 violations; {dict(sorted(outcomes.items()))}")
    assert outcomes["claim", "ok"] > 10 and outcomes["heartbeat", "ok"] > 10
    assert outcomes["claim", "refused"] > 10 and outcomes["complete", "ok"] >= 1
    assert outcomes["claim", "unknown"] + outcomes["heartbeat", "unknown"] >= 1
    events, chain = _events(run.db)
    assert isinstance(chain, Verified), chain
    _agrees_with_the_log(history, events)


def _agrees_with_the_log(history: list[Call], events: list[ev.LedgerEvent]) -> None:
    """Every grant and completion a client saw acknowledged is in the log, once."""
    steps = {c.step for c in history}  # (other tests may share the store)
    events = [e for e in events if e.originator_id in steps]
    claimed = {(e.originator_id, e.session_id, e.fence) for e in events
               if isinstance(e, ev.StepClaimed)}
    completed = Counter(e.originator_id for e in events if isinstance(e, ev.StepCompleted))
    for call in history:
        if call.grant:
            assert (call.step, call.agent, call.fence) in claimed, call
        if call.op == "complete" and call.outcome == "ok":
            assert completed[call.step] == 1, call
    assert max(completed.values(), default=0) <= 1
    fences: dict[str, list[int]] = {}
    for e in events:
        if isinstance(e, ev.StepClaimed):
            fences.setdefault(e.originator_id, []).append(e.fence)
    assert all(f == list(range(1, len(f) + 1)) for f in fences.values())


@pytest.mark.slow
def test_the_checker_finds_a_violation_planted_in_a_real_history(sqlite_run: Run) -> None:
    history = sqlite_run.history
    assert check(history) == []
    first = next(c for c in history if c.grant)
    stranger = next(c.agent for c in history if c.agent != first.agent)
    planted = replace(first, agent=stranger, start=first.start + 0.001, end=first.end + 0.001)

    (violation, *_) = check([*history, planted])

    assert violation.rule == "double grant"
    assert f"fence {first.fence} granted twice" in violation.describe()
    assert set(violation.witnesses) == {first, planted}


def _create_plan(url: str, slug: str, count: int) -> list[str]:
    made = httpx.post(f"{url}/api/plans", timeout=30, headers=author_at(url), json={
        "slug": slug, "title": slug, "steps": [{"title": f"step {i}"} for i in range(count)]})
    made.raise_for_status()
    return [str(step["step_id"]) for step in made.json()["steps"]]
