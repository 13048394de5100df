"""A PostgreSQL primary that dies under load, and its streaming standby promoted.

Two `planledger serve` replicas, each with the multi-host `--db` naming the primary and the
standby (`target_session_attrs=read-write`), serve six agents that claim the next step,
heartbeat it and complete it (bench/failover.py). After 40 completions the primary is
killed (`pg_ctl stop -m immediate`) and the standby promoted; the agents retry retryable
answers with the same Idempotency-Key until every step is done. The verdict comes from the
promoted database's log, against what the clients were told:

- synchronous replication: no acknowledged write is lost, no step ever has two live
  holders, every step is done exactly once, and no holder is refused;
- asynchronous replication (the standby's WAL 200 ms late, as on a slow link):
  acknowledged writes from before the kill may be lost (the test prints how many), but
  nothing acknowledged after it; the log still has no two live holders of a step, no
  version gap and a whole chain; a holder whose grant was lost is refused at its next
  heartbeat or completion, naming why; and the work still finishes, each step done once.
"""

from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import datetime

import httpx
import pytest

from planledger.api.cli.audit import store_entries
from planledger.api.runtime import open_runtime
from planledger.bench.failover import (
    PLAN,
    STEPS,
    WAL_DELAY,
    Record,
    fail_over,
    lost,
    not_done,
    read_log,
    served_after_loss,
)
from planledger.bench.servers import ROOMY, Replica, create_plan, replicas
from planledger.ledger.chain import Verified, verify
from planledger.ledger.domain import events as ev
from tests.support.pg_standby import standby_pair

Log = list[tuple[int, ev.LedgerEvent]]
# What a holder is told when the grant it holds is not the ledger's (ledger/domain/errors):
# `closed` when, its grant lost, another agent claimed and finished the step meanwhile.
HOLDER_REFUSALS = {"not_holder", "stale_fence", "held_elsewhere", "closed"}


def _failover(synchronous: bool) -> tuple[Record, Log, list[dict[str, int]], object]:
    """One failover: what the clients were told, the promoted log, each replica's progress
    of the plan, and the chain check of the promoted log."""
    with standby_pair(synchronous=synchronous,
                      wal_delay=0.0 if synchronous else WAL_DELAY) as pair:
        url = f"{pair.url}&connect_timeout=3"
        with replicas(url, 2, ROOMY) as servers:
            create_plan(servers[0], PLAN, [{"title": f"step {i}"} for i in range(STEPS)])
            record = fail_over(pair, servers)
            progress = [_progress(server) for server in servers]
        log = read_log(url)
        runtime = open_runtime(url)
        try:
            chain = verify(store_entries(runtime.store))
        finally:
            runtime.close()
    return record, log, progress, chain


def _progress(server: Replica) -> dict[str, int]:
    answer = httpx.get(f"{server.url}/api/plans/{PLAN}", timeout=30)
    answer.raise_for_status()
    return dict(answer.json()["progress"])


def _holder_violations(log: Log) -> list[str]:
    """What the log itself shows wrong with a step's holders: a version gap in its stream,
    a claim while another session's lease was live, a fence that did not grow, a renewal
    or completion by a session that did not hold the step under that fence."""
    streams: dict[str, list[ev.LedgerEvent]] = defaultdict(list)
    for _, event in log:
        streams[event.originator_id].append(event)
    found = []
    for stream, events in streams.items():
        versions = [e.originator_version for e in events]
        if versions != list(range(versions[0], versions[0] + len(versions))):
            found.append(f"{stream}: versions jump: {versions}")
        found += _step_violations(stream, events)
    return found


def _step_violations(step: str, events: Sequence[ev.LedgerEvent]) -> list[str]:
    holder: tuple[str | None, int, datetime] | None = None
    fence, done, found = 0, False, []
    for e in events:
        if isinstance(e, ev.StepClaimed):
            if done:
                found.append(f"{step}: claimed by {e.session_id} after its completion")
            if holder and holder[2] > e.timestamp and holder[0] != e.session_id:
                found.append(f"{step}: claimed by {e.session_id} while {holder[0]} held it")
            if e.fence <= fence:
                found.append(f"{step}: fence {e.fence} granted after fence {fence}")
            holder, fence = (e.session_id, e.fence, e.expires_at), e.fence
        elif isinstance(e, ev.LeaseRenewed):
            if holder is None or holder[:2] != (e.session_id, e.fence):
                found.append(f"{step}: renewed by {e.session_id} (fence {e.fence}), "
                             f"held by {holder}")
            holder = (e.session_id, e.fence, e.expires_at)
        elif isinstance(e, ev.StepCompleted):
            if done or holder is None or holder[:2] != (e.session_id, e.fence):
                found.append(f"{step}: completed by {e.session_id} (fence {e.fence}), "
                             f"held by {holder}, done already: {done}")
            holder, done = None, True
        elif isinstance(e, ev.StepReleased):
            holder = None
    return found


def _completions(log: Log) -> Counter[str]:
    return Counter(e.originator_id for _, e in log if isinstance(e, ev.StepCompleted))


@pytest.mark.timeout(300)
def test_synchronous_failover_loses_no_acknowledged_write_and_does_each_step_once() -> None:
    record, log, progress, chain = _failover(synchronous=True)
    assert record.unexpected == []
    assert lost(record, log) == []
    assert record.refusals == []  # no grant was lost, so no holder is refused
    assert _holder_violations(log) == []
    assert not_done(log) == set() and set(_completions(log).values()) == {1}
    assert isinstance(chain, Verified), chain
    assert [p["done"] for p in progress] == [STEPS, STEPS], progress
    assert record.time_to_serve_again() is not None


@pytest.mark.timeout(300)
def test_asynchronous_failover_loses_only_writes_before_the_kill_and_no_step_twice() -> None:
    record, log, progress, chain = _failover(synchronous=False)
    missing = lost(record, log)
    print(f"asynchronous failover: {len(record.acks)} acknowledged writes, {len(missing)} "
          f"lost ({Counter(a.kind for a in missing)}), {len(record.refusals)} holders "
          f"refused, {len(not_done(log))} steps not done")
    # Every rule is judged, so that a failure shows all that went wrong, not the first.
    broken = {
        "lost though acknowledged after the kill": [a for a in missing
                                                    if a.sent > record.dead_at],
        "served a holder whose grant was lost": served_after_loss(record, missing),
        "holders in the log": _holder_violations(log),
        "chain": [] if isinstance(chain, Verified) else [chain],
        "refusals that name no holder rule": [r for r in record.refusals
                                              if r.reason not in HOLDER_REFUSALS or not r.message],
        "unexpected answers": record.unexpected,
        "steps not done in the log": sorted(not_done(log)),
        "steps done more than once": [s for s, n in _completions(log).items() if n > 1],
        "replicas' done counts off the log": [p for p in progress
                                              if p["done"] != len(_completions(log))],
    }
    found = {rule: items for rule, items in broken.items() if items}
    assert not found, "\n".join(f"{rule} ({len(items)}): {items[:3]}"
                                 for rule, items in found.items())
