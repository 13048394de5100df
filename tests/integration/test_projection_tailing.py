"""A model kept in one process sees what other OS processes append, within a bounded delay,
when a log follower feeds it; and a caller reads its own writes when it asks to."""

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.domain.ids import PlanSlug
from planledger.projections.follower import PollingFollower, follow
from planledger.projections.readmodel import ReadModel
from tests.support.fakes import FakeClock, SequentialIds
from tests.support.postgres import fresh_schema
from tests.support.seed import seed_auth_refresh

ROOT = Path(__file__).resolve().parents[2]

# Run by another Python process: opens the same SQLite log, starts a session, creates a
# plan with two steps, claims the first, and prints the log position of its last append.
WRITER = textwrap.dedent("""
    import sys
    from planledger.api.runtime import open_runtime
    from planledger.ledger.application import NewStep
    rt = open_runtime(sys.argv[1])
    agent = rt.ledger.start_session("other process")
    _, (first, second) = rt.ledger.create_plan(
        "from-afar", "Made elsewhere", steps=[NewStep("first"), NewStep("second")],
        actor=agent.id)
    rt.ledger.claim(first, agent.id)
    print(rt.store.last_position(), agent.id, first, second)
    rt.close()
""")


def run_writer(db: Path) -> tuple[int, str, str, str]:
    done = subprocess.run([sys.executable, "-c", WRITER, str(db)], cwd=ROOT, check=True,
                          capture_output=True, text=True, timeout=60)
    position, agent, first, second = done.stdout.split()
    return int(position), agent, first, second


def test_events_appended_by_another_process_appear_in_a_tailing_model(tmp_path: Path) -> None:
    db, clock = tmp_path / "ledger.sqlite", FakeClock()
    rt = open_runtime(str(db), clock=clock)
    model = ReadModel(rt.store, clock, pull_on_read=False)  # only the follower feeds it
    follower = follow(model, interval=0.02)
    try:
        position, agent, first, second = run_writer(db)
        assert follower.wait_for(position, timeout=10)
        assert model.position >= position
        assert model.ready_ids(PlanSlug("from-afar")) == [second]
        [held] = model.holders()
        assert (held.step_id, held.session_id, held.session_name) == (
            first, agent, "other process")
    finally:
        follower.stop()
        rt.close()


def test_without_a_follower_a_model_that_does_not_pull_stays_where_it_was(
    tmp_path: Path
) -> None:
    db, clock = tmp_path / "ledger.sqlite", FakeClock()
    rt = open_runtime(str(db), clock=clock)
    model = ReadModel(rt.store, clock, pull_on_read=False)
    position, *_ = run_writer(db)
    assert model.position == 0 and model.plan_slugs() == []
    model.wait_for(position)
    assert model.plan_slugs() == ["from-afar"]
    rt.close()


def test_a_stopped_follower_resumes_from_the_model_position(runtime: Runtime) -> None:
    model = ReadModel(runtime.store, runtime.ledger.clock, pull_on_read=False)
    runtime.ledger.start_session("one")
    with PollingFollower(runtime.store, model.apply_notifications, interval=0.01) as follower:
        assert follower.wait_for(1, timeout=10)
    runtime.ledger.start_session("two")
    again = PollingFollower(runtime.store, model.apply_notifications, model.position,
                            interval=0.01).start()
    assert again.wait_for(2, timeout=10)
    again.stop()
    assert sorted(s.name or "" for s in model.sessions.values()) == ["one", "two"]


def test_read_your_writes_after_claim(runtime: Runtime, clock: FakeClock) -> None:
    """A model fed only in the background may lag; a caller that just claimed asks it to
    wait for its own append, and then never sees the step it holds as ready."""
    steps = seed_auth_refresh(runtime.ledger)
    model = ReadModel(runtime.store, clock, pull_on_read=False)
    model.catch_up()
    agent = runtime.ledger.start_session("agent B")
    runtime.ledger.claim(steps[4], agent.id)
    assert steps[4] in model.ready(PlanSlug("auth-refresh"))  # the lag a follower leaves
    model.wait_for_my_writes(timeout=5)
    assert model.ready(PlanSlug("auth-refresh")) == [steps[5]]
    assert [h.step_id for h in model.holdings_of(agent.id)] == [steps[4]]


def test_read_your_writes_is_per_thread(runtime: Runtime, clock: FakeClock) -> None:
    steps = seed_auth_refresh(runtime.ledger)
    model = ReadModel(runtime.store, clock, pull_on_read=False)
    model.catch_up()
    seen: list[object] = []

    def agent_thread() -> None:
        agent = runtime.ledger.start_session("agent A")
        runtime.ledger.claim(steps[5], agent.id)
        model.wait_for_my_writes(timeout=5)
        seen.append(model.ready(PlanSlug("auth-refresh")))

    worker = threading.Thread(target=agent_thread)
    worker.start()
    worker.join(30)
    assert seen == [[steps[4]]]
    assert runtime.store.last_position() is not None  # this thread seeded: its own position


def test_waiting_for_a_position_never_appended_times_out(runtime: Runtime) -> None:
    model = ReadModel(runtime.store, runtime.ledger.clock)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="position 99 was not applied"):
        model.wait_for(99, timeout=0.2)
    assert time.monotonic() - started < 5


def test_a_follower_counts_failed_pulls_and_keeps_going() -> None:
    rt = open_runtime("memory", clock=FakeClock(), ids=SequentialIds())
    rt.ledger.start_session("x")

    def apply(notes: object) -> int:
        raise RuntimeError("the model is busy")

    follower = PollingFollower(rt.store, apply, interval=0.01).start()
    deadline = time.monotonic() + 10
    while follower.errors < 2 and time.monotonic() < deadline:
        follower.wait_for(1, timeout=0.05)  # never reached: a bounded wait between looks
    follower.stop()
    assert follower.errors >= 2 and isinstance(follower.last_error, RuntimeError)
    assert follower.position == 0


def test_on_postgresql_the_runtime_follows_by_listen_notify_and_feeds_the_model() -> None:
    with fresh_schema(pool_size=2, max_overflow=2) as url:
        reader, writer = open_runtime(url), open_runtime(url)
        # The follower the runtime chose for its store, feeding a model that never pulls.
        model = ReadModel(reader.store, FakeClock(), pull_on_read=False, tail=reader.reads.tail)
        follower = follow(model)
        try:
            assert type(follower).__name__ == "PgFollower"
            steps = seed_auth_refresh(writer.ledger)
            agent = writer.ledger.start_session("agent B")
            writer.ledger.claim(steps[4], agent.id)
            assert follower.wait_for(writer.store.last_position() or 0, timeout=10)
            assert model.ready(PlanSlug("auth-refresh")) == [steps[5]]
        finally:
            follower.stop()
            reader.close()
            writer.close()
