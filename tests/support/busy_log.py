"""A log with every kind of command in it, refused attempts included, for replay tests."""

from dataclasses import dataclass

from planledger.ledger import commands as cmd
from planledger.ledger.application import Ledger, NewStep
from planledger.ledger.domain import errors
from planledger.ledger.domain.access import digest_of
from planledger.ledger.domain.evidence import Check, Evidence
from planledger.ledger.domain.ids import StepId
from planledger.replays.fixture import PLAN, seed_auth_refresh
from tests.support import OPERATOR
from tests.support.fakes import FakeClock

EVIDENCE = Evidence(commits=("9fceb02d0ae598e95dc970b74767f19372d61af8",), branch="limiter",
                    pr="https://github.com/example/app/pull/5",
                    checks=(Check("tests", "pass", "pytest -q", "12 passed"),
                            Check("load", "fail", None, "p99 over budget")))


@dataclass(frozen=True)
class BusyLog:
    steps: list[StepId]
    extra: StepId
    agents: tuple[str, str, str]


def write_busy_log(ledger: Ledger, clock: FakeClock) -> BusyLog:
    """The seed, then three sessions doing everything a ledger allows and is refused."""
    steps = seed_auth_refresh(ledger, race=True)
    a, b, c = (ledger.start_session(n).id for n in ("agent A", "agent B", None))
    ledger.list_ready(PLAN, a)
    clock.advance(1)
    first = ledger.claim(steps[4], b, lease_seconds=60)
    _refused(errors.AlreadyClaimed, lambda: ledger.claim(steps[4], a))
    ledger.heartbeat(steps[4], b, lease_seconds=60)
    extra = ledger.add_step(PLAN, "Document the refresh flow", "why & how", [steps[5]], actor=a)
    _refused(errors.Blocked, lambda: ledger.claim(extra, a))
    ledger.revise_step(extra, title="Document <refresh> & reuse", actor=a)
    ledger.declare_dependencies(extra, [steps[4]], actor=a)
    (lone,) = ledger.execute(cmd.CreatePlan("second", "A second plan", c,
                                            steps=(NewStep("lone step"),),
                                            require_checks_pass=True)).step_ids
    clock.advance(61)  # B's lease lapses: A takes the step over under a new fence
    ledger.claim(steps[4], a)
    _refused(errors.StaleFence, lambda: ledger.complete(steps[4], b, fence=first.fence))
    ledger.release(steps[4], a)
    ledger.claim(steps[4], c)
    ledger.force_release(steps[4], OPERATOR)
    ledger.claim(steps[5], a)
    ledger.drop(steps[5], a)
    _refused(errors.Closed, lambda: ledger.claim(steps[5], c))
    ledger.drop(lone, OPERATOR)
    ledger.reopen(lone, OPERATOR)
    clock.advance(2)
    ledger.claim_next(PLAN, b)
    ledger.end_session(b)  # releases what B holds, each as its own event
    ledger.claim(steps[4], c)
    ledger.execute(cmd.Complete(steps[4], c, note="limited per IP and per family",
                                evidence=EVIDENCE))
    _hand_over(ledger, lone, a)
    _keyed(ledger, steps[4])
    return BusyLog(steps, extra, (a, b, c))


def _keyed(ledger: Ledger, step: StepId) -> None:
    """A key issued, a session started with it noting a step, and the key revoked."""
    ledger.execute(cmd.IssueKey("ci-bot", "worker", digest_of("plk_example"), OPERATOR))
    bot = ledger.execute(cmd.StartSession("bot", key="ci-bot", role="worker")).id
    ledger.execute(cmd.AddNote(step, bot, "seen by the bot"))
    ledger.execute(cmd.RevokeKey("ci-bot", OPERATOR))


def _hand_over(ledger: Ledger, step: StepId, other: str) -> None:
    """A session that says where it works leaves a step with a note, another notes it, and
    the first ends with its findings."""
    d = ledger.execute(cmd.StartSession("agent D", cwd="/home/dev/app", source="codex-cli",
                                        model="a-model")).id
    ledger.claim(step, d)
    ledger.execute(cmd.Release(step, d, note="half done: the parser is in; tests are not"))
    ledger.execute(cmd.AddNote(step, other, "the fixtures live in tests/data"))
    ledger.execute(cmd.EndSession(d, findings="parser written; tests left to do"))


def _refused(kind: type[errors.LedgerError], call: object) -> None:
    try:
        call()  # type: ignore[operator]
    except kind:
        return
    raise AssertionError(f"expected {kind.__name__}")
