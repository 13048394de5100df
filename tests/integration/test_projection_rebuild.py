"""Read models are disposable: a rebuild from the log equals the state kept incrementally,
and a restart resumes from the checkpoint's tracked position without applying twice."""

import contextlib
import itertools
import random
from pathlib import Path

from planledger.api.runtime import Runtime, open_checkpoints, open_runtime
from planledger.ledger.application import NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain.ids import PlanSlug
from planledger.projections.checkpoints import MemoryCheckpointRecorder
from planledger.projections.readmodel import ReadModel
from tests.support import OPERATOR
from tests.support.fakes import FakeClock, SequentialIds

REFUSALS = (errors.AlreadyClaimed, errors.Blocked, errors.Closed, errors.NotHolder,
            errors.SessionClosed, errors.NotReopenable, errors.StaleFence)


ACTIONS = {"claim": 4, "heartbeat": 3, "complete": 3, "release": 1, "drop": 1, "reopen": 1,
           "tick": 2, "end": 1, "next": 1, "fence": 1}


def random_workload(rt: Runtime, clock: FakeClock, seed: int, commands: int,
                    after_each: ReadModel | None = None) -> None:
    """Plans with random dependency graphs, and agents that claim, heartbeat, finish, drop,
    release, bounce, lapse, reopen and come and go, chosen at random."""
    rng = random.Random(seed)
    plans = []
    for p in range(3):
        specs = [NewStep(f"step {i}", key=f"k{i}", depends_on=[
            f"k{d}" for d in rng.sample(range(i), min(i, rng.randint(0, 2)))])
            for i in range(rng.randint(10, 40))]
        plans.append(rt.ledger.create_plan(f"plan-{seed}-{p}", f"Plan {p}", steps=specs,
            actor=OPERATOR)[0].slug)
    sessions = [rt.ledger.start_session(f"agent {i}").id for i in range(4)]
    actions, weights = list(ACTIONS), list(ACTIONS.values())
    for _ in range(commands):
        action = rng.choices(actions, weights)[0]
        with contextlib.suppress(*REFUSALS):
            _act(rt, clock, rng, action, rng.choice(plans), sessions)
        if after_each is not None:
            after_each.catch_up()


def _act(rt: Runtime, clock: FakeClock, rng: random.Random, action: str, plan: PlanSlug,
         sessions: list[str]) -> None:
    ledger, who = rt.ledger, rng.randrange(len(sessions))
    session, step = sessions[who], rng.choice(list(rt.store.plan(plan).steps))
    held = rt.reads.holders(plan)
    if action in ("heartbeat", "complete", "release", "fence") and held and rng.random() < 0.9:
        pick = rng.choice(held)
        step, session = pick.step_id, pick.session_id if rng.random() < 0.9 else session
    elif action == "claim" and rng.random() < 0.7:
        step = rng.choice(rt.reads.ready_ids(plan) or [step])
    if action in ("claim", "heartbeat"):
        getattr(ledger, action)(step, session, lease_seconds=rng.randint(5, 120))
    elif action in ("complete", "release"):
        getattr(ledger, action)(step, session)
    elif action == "fence":
        ledger.complete(step, session, fence=rng.randint(0, 3))
    elif action == "drop":
        ledger.drop(step, session if rng.random() < 0.5 else OPERATOR)
    elif action == "reopen":
        ledger.reopen(step, OPERATOR)
    elif action == "tick":
        clock.advance(rng.randint(1, 90))
    elif action == "end":
        ledger.end_session(session)
        sessions[who] = ledger.start_session(f"agent {who} again").id
    elif action == "next":
        ledger.claim_next(plan, session, lease_seconds=30)


def answers(model: ReadModel) -> list[object]:
    """What a user would ask of every plan, at the model's clock."""
    found: list[object] = [model.holders(), model.ready_steps()]
    for plan in model.plan_slugs():
        found += [model.ready_steps(plan), model.blocked(plan), model.progress(plan),
                  model.verdicts(plan)]
    return found


def test_rebuild_equals_incremental_after_thousands_of_random_events(
    runtime: Runtime, clock: FakeClock
) -> None:
    incremental = ReadModel(runtime.store, clock, pull_on_read=False)
    random_workload(runtime, clock, seed=7, commands=3500, after_each=incremental)
    assert incremental.position > 2000
    kept, asked = incremental.facts(), answers(incremental)

    fresh = ReadModel(runtime.store, clock, pull_on_read=False)
    fresh.catch_up()
    assert fresh.facts() == kept
    assert answers(fresh) == asked

    incremental.rebuild()
    assert incremental.facts() == kept
    assert answers(incremental) == asked


def test_rebuild_with_tiny_pages_equals_one_big_page(runtime: Runtime, clock: FakeClock) -> None:
    random_workload(runtime, clock, seed=11, commands=300)
    big = ReadModel(runtime.store, clock, page=100_000)
    small = ReadModel(runtime.store, clock, page=3)
    big.catch_up()
    small.catch_up()
    assert small.facts() == big.facts()


def test_applying_the_same_notifications_again_changes_nothing(
    runtime: Runtime, clock: FakeClock
) -> None:
    random_workload(runtime, clock, seed=3, commands=200)
    model = ReadModel(runtime.store, clock)
    model.catch_up()
    before = model.facts()
    everything = runtime.store.recorder.select_notifications(start=1, limit=100_000)
    assert model.apply_notifications(everything) == before["position"]
    assert model.facts() == before


def test_restart_resumes_from_the_tracked_position_without_double_applying(
    tmp_path: Path
) -> None:
    db, clock = str(tmp_path / "ledger.sqlite"), FakeClock()
    rt = open_runtime(db, clock=clock, ids=SequentialIds())
    first = ReadModel(rt.store, clock, checkpoints=open_checkpoints(db))
    random_workload(rt, clock, seed=5, commands=300, after_each=first)
    assert first.checkpoint()
    saved_at = first.position
    random_workload(rt, clock, seed=6, commands=300)  # appended while no model runs
    rt.close()

    rt = open_runtime(db, clock=clock, ids=SequentialIds())
    restarted = ReadModel(rt.store, clock, checkpoints=open_checkpoints(db), pull_on_read=False)
    assert restarted.position == saved_at  # resumed from the checkpoint, not from zero
    restarted.catch_up()
    rebuilt = ReadModel(rt.store, clock, pull_on_read=False)
    rebuilt.catch_up()
    assert restarted.position > saved_at
    assert restarted.facts() == rebuilt.facts()  # every event applied once: no more, no less
    rt.close()


def test_an_older_checkpoint_never_replaces_a_newer_one(runtime: Runtime, clock: FakeClock) -> None:
    checkpoints = MemoryCheckpointRecorder()
    behind = ReadModel(runtime.store, clock, checkpoints=checkpoints, pull_on_read=False)
    random_workload(runtime, clock, seed=8, commands=50)
    behind.catch_up()
    ahead = ReadModel(runtime.store, clock, checkpoints=checkpoints, pull_on_read=False)
    random_workload(runtime, clock, seed=9, commands=50)
    ahead.catch_up()
    assert ahead.checkpoint()
    assert not behind.checkpoint()
    found = checkpoints.load_checkpoint(runtime.store.name)
    assert found is not None and found[0] == ahead.position
    assert checkpoints.max_tracking_id(runtime.store.name) == ahead.position


def test_a_checkpoint_from_a_longer_log_is_ignored(clock: FakeClock) -> None:
    checkpoints = MemoryCheckpointRecorder()
    long_log = open_runtime("memory", clock=clock, ids=SequentialIds())
    random_workload(long_log, clock, seed=1, commands=30)
    saver = ReadModel(long_log.store, clock, checkpoints=checkpoints)
    saver.catch_up()
    assert saver.checkpoint()
    short_log = open_runtime("memory", clock=clock, ids=SequentialIds())
    short_log.ledger.start_session("alone")
    model = ReadModel(short_log.store, clock, checkpoints=checkpoints)
    assert model.position == 0
    model.catch_up()
    assert model.position == 1 and model.plan_slugs() == []


def test_plans_of_a_rebuilt_model_read_the_same_rollups(runtime: Runtime, clock: FakeClock) -> None:
    random_workload(runtime, clock, seed=2, commands=200)
    lines = [runtime.reads.progress(PlanSlug(p)).rollup for p in runtime.reads.plan_slugs()]
    runtime.reads.rebuild()
    assert [runtime.reads.progress(PlanSlug(p)).rollup
            for p in runtime.reads.plan_slugs()] == lines


def test_a_model_saves_a_checkpoint_every_so_many_events(
    runtime: Runtime, clock: FakeClock
) -> None:
    checkpoints = MemoryCheckpointRecorder()
    model = ReadModel(runtime.store, clock, checkpoints=checkpoints, checkpoint_every=100)
    random_workload(runtime, clock, seed=4, commands=200, after_each=model)
    saved = checkpoints.max_tracking_id(runtime.store.name)
    assert saved is not None and model.position - 100 < saved <= model.position
    resumed = ReadModel(runtime.store, clock, checkpoints=checkpoints, pull_on_read=False)
    assert resumed.position == saved


def test_on_a_long_log_checkpoints_come_every_quarter_of_its_length(
    runtime: Runtime, clock: FakeClock
) -> None:
    checkpoints = MemoryCheckpointRecorder()
    model = ReadModel(runtime.store, clock, checkpoints=checkpoints, checkpoint_every=10)
    saves: list[int] = []

    def note_saves() -> None:
        saved = checkpoints.max_tracking_id(runtime.store.name)
        if saved is not None and saved not in saves:
            saves.append(saved)

    random_workload(runtime, clock, seed=14, commands=300, after_each=model)
    for _ in range(400):  # catch up after every command, noting each save
        runtime.ledger.start_session("one more")
        model.catch_up()
        note_saves()
    gaps = list(itertools.pairwise(saves))
    assert len(gaps) >= 3
    assert all(later - earlier >= max(10, later // 4) for earlier, later in gaps)
    assert all(later - earlier < max(10, later // 4) + 2 for earlier, later in gaps)


def assert_same_as_a_rebuild(rt: Runtime, clock: FakeClock) -> None:
    """The runtime's read model, caught up, holds what a fresh fold of its log holds."""
    rebuilt = ReadModel(rt.store, clock)
    rt.reads.catch_up()
    rebuilt.catch_up()
    assert rt.reads.facts() == rebuilt.facts()


def restarted(db: str, clock: FakeClock, seed: int, commands: int) -> tuple[Runtime, int]:
    """A server runtime on `db` after a first one ran a workload and closed (saving its
    checkpoint), and the position that first one had applied."""
    first = open_runtime(db, clock=clock, ids=SequentialIds(), checkpoints=True)
    random_workload(first, clock, seed=seed, commands=commands)
    saved_at = first.reads.catch_up()
    first.close(checkpoint=True)  # as a server shutting down
    return open_runtime(db, clock=clock, checkpoints=True), saved_at


def test_a_server_runtime_resumes_from_the_checkpoint_it_saved_on_close(
    tmp_path: Path, clock: FakeClock
) -> None:
    rt, saved_at = restarted(str(tmp_path / "ledger.sqlite"), clock, seed=11, commands=300)
    assert rt.reads.resumed_from == saved_at
    assert_same_as_a_rebuild(rt, clock)
    rt.close()


def test_a_checkpoint_of_a_replaced_log_is_ignored(tmp_path: Path, clock: FakeClock) -> None:
    db = tmp_path / "ledger.sqlite"
    rt = open_runtime(str(db), clock=clock, ids=SequentialIds(), checkpoints=True)
    random_workload(rt, clock, seed=12, commands=100)
    rt.reads.catch_up()
    rt.close(checkpoint=True)
    for path in tmp_path.glob("ledger.sqlite*"):  # the log goes; its views file stays
        path.unlink()

    other = open_runtime(str(db), clock=clock, ids=SequentialIds())
    random_workload(other, clock, seed=13, commands=300)  # a longer, different log
    other.close()
    rt = open_runtime(str(db), clock=clock, checkpoints=True)
    assert rt.reads.resumed_from == 0
    assert_same_as_a_rebuild(rt, clock)
    rt.close()
