"""The claim handlers' decisions, given plain events: claim, heartbeat, claim-next,
complete, release, drop, reopen and force-release, and what a caller attaches to them."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import SessionId, StepId
from planledger.ledger.execution import Outcome
from tests.support import OPERATOR
from tests.support.fakes import EPOCH, FakeClock
from tests.support.given import (
    LEASE,
    PLAN,
    Scene,
    claimed,
    completed,
    dropped,
    ended,
    from_now,
    given,
    plan,
    started,
    step,
    title_of,
)

A, B, C = StepId("A"), StepId("B"), StepId("C")
S1, S2 = SessionId("S1"), SessionId("S2")


def _two_sessions_and(*steps: list[ev.LedgerEvent]) -> list[ev.LedgerEvent]:
    """Sessions S1 and S2, and plan p with the given steps."""
    return [started(S1), started(S2), plan(), *(e for s in steps for e in s)]


# Each step's reference, where the test adds A, B and C to plan p in that order.
REF = {A: f"{PLAN}#1", B: f"{PLAN}#2", C: f"{PLAN}#3"}


def _grant(step_id: StepId, by: SessionId, fence: int, **changes: Any) -> c.Grant:
    fields: dict[str, Any] = {"expires_at": from_now(LEASE), "renewed": False,
                              "ref": REF[step_id], **changes}
    return c.Grant(step_id, by, fence, plan=PLAN, title=title_of(step_id), **fields)


# --- claim -------------------------------------------------------------------------------


def test_claim_of_an_open_step_grants_the_first_fence_for_the_default_lease() -> None:
    then = given(*_two_sessions_and(step(A))).when(c.Claim(A, S1))

    assert then.answer == _grant(A, S1, 1)
    assert then.kinds == ["StepClaimed"]
    claim = then.one(ev.StepClaimed)
    assert (claim.originator_id, claim.session_id, claim.fence) == (A, S1, 1)
    assert (claim.lease_seconds, claim.expires_at) == (LEASE, from_now(LEASE))


def test_claim_with_its_own_lease_ends_when_asked() -> None:
    then = given(*_two_sessions_and(step(A))).when(c.Claim(A, S1, lease_seconds=5))
    assert then.answer.expires_at == then.one(ev.StepClaimed).expires_at == from_now(5)


def test_second_claim_on_live_lease_bounces_naming_holder() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S2)).when(c.Claim(A, S1))

    refusal = then.refused(errors.AlreadyClaimed)
    assert (refusal.holder, refusal.fence) == (S2, 1)
    bounce = then.one(ev.ClaimBounced)
    assert then.kinds == ["ClaimBounced"]
    assert (bounce.originator_id, bounce.step_id, bounce.holder, bounce.holder_fence) == (
        S1, A, S2, 1)


def test_claim_on_lapsed_lease_takes_over_with_the_next_fence() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S2, expires_in=0)).when(
        c.Claim(A, S1))

    assert then.answer == _grant(A, S1, 2, took_over_from=S2)
    assert then.kinds == ["StepClaimed"]
    assert (then.one(ev.StepClaimed).session_id, then.one(ev.StepClaimed).fence) == (S1, 2)


def test_claim_of_a_step_whose_holder_ended_takes_over() -> None:
    scene = given(*_two_sessions_and(step(A)), claimed(A, by=S2), ended(S2))
    assert scene.when(c.Claim(A, S1)).answer == _grant(A, S1, 2, took_over_from=S2)


def test_holders_own_claim_renews_its_lease_at_the_same_fence() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S1, expires_in=10)).when(
        c.Claim(A, S1))

    assert then.answer == _grant(A, S1, 1, renewed=True)
    assert then.kinds == ["LeaseRenewed"]
    assert then.one(ev.LeaseRenewed).expires_at == from_now(LEASE)


def test_claim_of_a_step_waiting_on_an_open_dependency_is_refused_as_blocked() -> None:
    then = given(*_two_sessions_and(step(A), step(B, after=[A]))).when(c.Claim(B, S1))

    assert then.refused(errors.Blocked).blockers == [(A, title_of(A), "open")]
    refused = then.one(ev.ClaimRefused)
    assert then.kinds == ["ClaimRefused"]
    assert (refused.originator_id, refused.step_id, refused.reason) == (S1, B, "blocked")


def test_claim_of_a_step_whose_dependency_is_dropped_is_granted() -> None:
    scene = given(*_two_sessions_and(step(A), step(B, after=[A])), dropped(A))
    assert scene.when(c.Claim(B, S1)).answer == _grant(B, S1, 1)


def test_claim_of_a_done_step_is_refused_as_closed() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S2), completed(A, by=S2)).when(
        c.Claim(A, S1))

    assert then.refused(errors.Closed).status == "done"
    assert then.kinds == ["ClaimRefused"]
    assert then.one(ev.ClaimRefused).reason == "closed"


def test_claim_by_an_ended_session_is_refused_and_writes_nothing() -> None:
    then = given(*_two_sessions_and(step(A)), ended(S1)).when(c.Claim(A, S1))
    assert then.refused(errors.SessionClosed).session_id == S1
    assert then.events == []


def test_claim_with_a_lease_out_of_bounds_writes_nothing() -> None:
    then = given(*_two_sessions_and(step(A))).when(c.Claim(A, S1, lease_seconds=0))
    assert then.refused(errors.InvalidInput).field == "lease_seconds"
    assert then.events == []


def test_claim_of_an_unknown_step_writes_nothing() -> None:
    then = given(*_two_sessions_and(step(A))).when(c.Claim("nope", S1))
    assert then.refused(errors.UnknownStep).step_id == "nope"
    assert then.events == []


# --- heartbeat ---------------------------------------------------------------------------


def test_heartbeat_by_the_holder_extends_its_lease_from_now() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S1, expires_in=3)).when(
        c.Heartbeat(A, S1, lease_seconds=120))

    assert then.answer == _grant(A, S1, 1, renewed=True, expires_at=from_now(120))
    assert then.kinds == ["LeaseRenewed"]
    assert then.one(ev.LeaseRenewed).lease_seconds == 120


def test_a_heartbeat_with_a_shorter_lease_keeps_the_expiry_already_granted() -> None:
    """tasks_claim says a heartbeat extends the lease: a shorter lease_seconds never moves
    its end earlier (MCP Agent Mail's lifecycle tests renew with less)."""
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S1, expires_in=900)).when(
        c.Heartbeat(A, S1, lease_seconds=60))

    assert then.answer == _grant(A, S1, 1, renewed=True, expires_at=from_now(900))
    assert then.one(ev.LeaseRenewed).expires_at == from_now(900)


def test_heartbeat_by_non_holder_is_refused_naming_holder_with_no_event() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S2)).when(c.Heartbeat(A, S1))
    refusal = then.refused(errors.NotHolder)
    assert (refusal.session_id, refusal.holder) == (S1, S2)
    assert then.events == []


def test_heartbeat_on_a_lapsed_lease_is_refused_with_no_event() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S1, expires_in=-1)).when(
        c.Heartbeat(A, S1))
    assert then.refused(errors.NotHolder).holder is None
    assert then.events == []


class SteppingClock(FakeClock):
    """A clock that moves on a second each time it is read: time passing between a
    handler's reads, as a slow store or a retried append would let it."""

    def now(self) -> datetime:
        moment = super().now()
        self.advance(1)
        return moment


def test_heartbeat_while_its_lease_runs_out_never_grants_a_new_fence() -> None:
    # The clock moves a second per read and the lease has one left: whichever reading the
    # decision takes, a heartbeat renews the same fence or is refused, never re-grants.
    scene = given(*_two_sessions_and(step(A)), claimed(A, by=S1, expires_in=1),
                  clock=SteppingClock())
    then = scene.when(c.Heartbeat(A, S1))
    if then.refusal is None:
        assert then.kinds == ["LeaseRenewed"] and then.answer.fence == 1
    else:
        assert then.refused(errors.NotHolder) and then.events == []


# --- claim-next --------------------------------------------------------------------------


def test_claim_next_takes_the_first_ready_step_in_plan_order() -> None:
    then = given(*_two_sessions_and(step(A), step(B))).when(c.ClaimNext(PLAN, S1))
    assert then.answer == c.NextClaim(PLAN, _grant(A, S1, 1))
    assert then.kinds == ["StepClaimed"]


def test_claim_next_passes_over_held_and_blocked_steps() -> None:
    scene = given(*_two_sessions_and(step(A), step(B, after=[A]), step(C)), claimed(A, by=S2))
    then = scene.when(c.ClaimNext(PLAN, S1))
    assert then.answer == c.NextClaim(PLAN, _grant(C, S1, 1))
    assert then.kinds == ["StepClaimed"]


def test_claim_next_behind_a_lagging_view_skips_a_held_step_unrecorded() -> None:
    """A candidate read as held is passed over without a bounce (the session never asked
    for it); one that is still free by that read is claimed, and a refusal is recorded."""
    scene = given(*_two_sessions_and(step(A), step(B, after=[A]), step(C)), claimed(A, by=S2))
    scene.view.lagging = [A, B, C]

    then = scene.when(c.ClaimNext(PLAN, S1))

    assert then.answer.grant == _grant(C, S1, 1)
    assert then.kinds == ["ClaimRefused", "StepClaimed"]
    assert (then.one(ev.ClaimRefused).step_id, then.one(ev.ClaimRefused).reason) == (
        B, "blocked")


def test_claim_next_with_nothing_ready_answers_no_grant_and_writes_nothing() -> None:
    scene = given(*_two_sessions_and(step(A), step(B, after=[A])), claimed(A, by=S2))
    then = scene.when(c.ClaimNext(PLAN, S1))
    assert then.answer == c.NextClaim(PLAN, None)
    assert then.events == []


def test_claim_next_by_an_ended_session_is_refused() -> None:
    then = given(*_two_sessions_and(step(A)), ended(S1)).when(c.ClaimNext(PLAN, S1))
    assert then.refused(errors.SessionClosed).session_id == S1
    assert then.events == []


# --- complete and release ----------------------------------------------------------------


def test_complete_by_the_holder_closes_the_step_at_its_fence() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S1)).when(
        c.Complete(A, S1, fence=1))
    assert then.answer == c.StepChanged(A, PLAN, "done", REF[A])
    assert then.kinds == ["StepCompleted"]
    assert (then.one(ev.StepCompleted).session_id, then.one(ev.StepCompleted).fence) == (S1, 1)


def test_complete_with_stale_fence_is_rejected_on_the_record() -> None:
    scene = given(*_two_sessions_and(step(A)), claimed(A, by=S1, expires_in=-30),
                  claimed(A, by=S2, fence=2))
    then = scene.when(c.Complete(A, S1, fence=1))

    refusal = then.refused(errors.StaleFence)
    assert (refusal.fence, refusal.current, refusal.holder) == (1, 2, S2)
    rejected = then.one(ev.StaleFenceRejected)
    assert then.kinds == ["StaleFenceRejected"]
    assert (rejected.originator_id, rejected.step_id, rejected.action) == (S1, A, "complete")
    assert (rejected.fence, rejected.current_fence, rejected.holder) == (1, 2, S2)


def test_complete_by_a_non_holder_is_refused_with_no_event() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S2)).when(c.Complete(A, S1))
    assert then.refused(errors.NotHolder).holder == S2
    assert then.events == []


def test_complete_of_a_closed_step_is_refused_with_no_event() -> None:
    then = given(*_two_sessions_and(step(A)), dropped(A)).when(c.Complete(A, S1))
    assert then.refused(errors.Closed).status == "dropped"
    assert then.events == []


def test_release_by_the_holder_reopens_the_step() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S1)).when(c.Release(A, S1))
    assert then.answer == c.StepChanged(A, PLAN, "open", REF[A])
    released = then.one(ev.StepReleased)
    assert then.kinds == ["StepReleased"]
    assert (released.holder, released.fence, released.reason) == (S1, 1, "released")


def test_release_after_the_lease_lapsed_is_refused_with_no_event() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S1, expires_in=-1)).when(
        c.Release(A, S1))
    assert then.refused(errors.NotHolder).holder is None
    assert then.events == []


# --- drop --------------------------------------------------------------------------------


def test_drop_of_an_unheld_step_by_an_author_without_a_session() -> None:
    then = given(*_two_sessions_and(step(A))).when(c.Drop(A, OPERATOR))
    assert then.answer == c.StepChanged(A, PLAN, "dropped", REF[A])
    drop = then.one(ev.StepDropped)
    assert then.kinds == ["StepDropped"]
    assert (drop.actor, drop.session_id, drop.fence) == (OPERATOR, None, None)


def test_drop_of_an_unheld_step_by_any_session() -> None:
    then = given(*_two_sessions_and(step(A))).when(c.Drop(A, S1))
    assert then.answer.status == "dropped"
    assert (then.one(ev.StepDropped).session_id, then.one(ev.StepDropped).fence) == (S1, None)


def test_drop_by_the_holder_carries_its_fence() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S1)).when(c.Drop(A, S1, fence=1))
    assert then.answer.status == "dropped"
    assert then.one(ev.StepDropped).fence == 1


def test_drop_of_a_held_step_by_another_session_is_refused_naming_holder() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S2)).when(c.Drop(A, S1))
    assert then.refused(errors.NotHolder).holder == S2
    assert then.events == []


def test_drop_of_a_held_step_by_an_author_without_a_session_is_refused() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S2)).when(c.Drop(A, OPERATOR))
    assert then.refused(errors.NotHolder).holder == S2
    assert then.events == []


def test_drop_of_a_closed_step_by_an_author_without_a_session_is_refused_as_closed() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S1), completed(A, by=S1)).when(
        c.Drop(A, OPERATOR))
    assert then.refused(errors.Closed).status == "done"
    assert then.events == []


def test_drop_of_a_closed_step_by_a_session_is_refused_as_closed() -> None:
    then = given(*_two_sessions_and(step(A)), dropped(A)).when(c.Drop(A, S1))
    assert then.refused(errors.Closed).status == "dropped"
    assert then.events == []


def test_drop_with_stale_fence_is_rejected_on_the_record() -> None:
    scene = given(*_two_sessions_and(step(A)), claimed(A, by=S1, expires_in=-30),
                  claimed(A, by=S2, fence=2))
    then = scene.when(c.Drop(A, S1, fence=1))
    assert then.refused(errors.StaleFence).current == 2
    assert then.kinds == ["StaleFenceRejected"]
    assert then.one(ev.StaleFenceRejected).action == "drop"


# --- reopen and force-release ------------------------------------------------------------


def test_reopen_of_a_done_step_opens_it() -> None:
    scene = given(*_two_sessions_and(step(A)), claimed(A, by=S1), completed(A, by=S1))
    then = scene.when(c.Reopen(A, OPERATOR))
    assert then.answer == c.StepChanged(A, PLAN, "open", REF[A])
    assert then.kinds == ["StepReopened"]
    assert then.one(ev.StepReopened).actor == OPERATOR


def test_reopen_of_an_open_step_is_refused_with_no_event() -> None:
    then = given(*_two_sessions_and(step(A))).when(c.Reopen(A, S1))
    assert then.refused(errors.NotReopenable).status == "open"
    assert then.events == []


def test_force_release_frees_a_live_claim_naming_its_holder() -> None:
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S2)).when(
        c.ForceRelease(A, OPERATOR))
    assert then.answer == c.ForceReleased(A, released=True)
    released = then.one(ev.StepReleased)
    assert then.kinds == ["StepReleased"]
    assert (released.holder, released.reason, released.actor) == (S2, "forced", OPERATOR)


def test_force_release_frees_a_lapsed_claim_too() -> None:
    scene = given(*_two_sessions_and(step(A)), claimed(A, by=S2, expires_in=-1))
    then = scene.when(c.ForceRelease(A, OPERATOR))
    assert then.answer.released
    assert then.one(ev.StepReleased).holder == S2


def test_force_release_of_an_unheld_step_releases_nothing_and_writes_nothing() -> None:
    then = given(*_two_sessions_and(step(A))).when(c.ForceRelease(A, OPERATOR))
    assert then.answer == c.ForceReleased(A, released=False)
    assert then.events == []


# --- what a caller attaches --------------------------------------------------------------


@dataclass(frozen=True)
class Note:
    """A fact a caller attaches (as idempotency attaches its answer): not a ledger event."""

    originator_id: str
    originator_version: int
    timestamp: datetime
    text: str


class Noting:
    """An attachment that notes each outcome it is shown, and how far the log had got."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.seen: list[tuple[Outcome[Any], int]] = []

    def __call__(self, outcome: Outcome[Any]) -> list[Note]:
        self.seen.append((outcome, self.scene.store.log_end()))
        return [Note("note:x", len(self.seen), EPOCH, f"note {len(self.seen)}")]


def test_attach_sees_the_outcome_and_its_facts_land_in_the_same_append() -> None:
    scene = given(*_two_sessions_and(step(A)))
    noting, start = Noting(scene), scene.store.log_end()

    then = scene.when(c.Claim(A, S1), noting)

    [(outcome, log_end)] = noting.seen
    assert outcome.result == then.answer
    assert log_end == start  # shown before anything was written: the decision waits for it
    assert then.kinds == ["StepClaimed", "Note"]


def test_a_refused_decisions_attached_facts_land_with_its_events() -> None:
    scene = given(*_two_sessions_and(step(A)), claimed(A, by=S2))
    noting = Noting(scene)

    then = scene.when(c.Claim(A, S1), noting)

    [(outcome, _)] = noting.seen
    assert isinstance(outcome.decision.refusal, errors.AlreadyClaimed)
    assert outcome.result is None
    assert then.refused(errors.AlreadyClaimed).holder == S2
    assert then.kinds == ["ClaimBounced", "Note"]


def test_claim_next_attaches_to_its_answer_even_when_nothing_is_ready() -> None:
    scene = given(*_two_sessions_and(step(A)), claimed(A, by=S2))
    noting = Noting(scene)

    then = scene.when(c.ClaimNext(PLAN, S1), noting)

    [(outcome, _)] = noting.seen
    assert outcome.result == c.NextClaim(PLAN, None) == then.answer
    assert then.kinds == ["Note"]


def test_claim_next_attaches_once_to_the_grant_not_to_a_refusal_it_passes_over() -> None:
    scene = given(*_two_sessions_and(step(A), step(B, after=[A]), step(C)))
    scene.view.lagging = [B, C]
    noting = Noting(scene)

    then = scene.when(c.ClaimNext(PLAN, S1), noting)

    [(outcome, _)] = noting.seen
    assert outcome.result == then.answer == c.NextClaim(PLAN, _grant(C, S1, 1))
    assert then.kinds == ["ClaimRefused", "StepClaimed", "Note"]


def test_complete_with_claim_next_completes_then_claims_the_next_ready_step() -> None:
    scene = given(started(S1), plan(), *step(A), *step(B, after=[A]), claimed(A, by=S1))

    then = scene.when(c.Complete(A, S1, claim_next=True))

    assert then.answer.status == "done"
    assert then.answer.next is not None and then.answer.next.grant is not None
    assert then.answer.next.grant.step_id == B
    assert then.kinds[:2] == ["StepCompleted", "StepClaimed"]


def test_complete_with_claim_next_answers_nothing_ready_once_done() -> None:
    scene = given(started(S1), plan(), *step(A), claimed(A, by=S1))

    then = scene.when(c.Complete(A, S1, claim_next=True))

    assert then.answer.status == "done"
    assert then.answer.next is not None and then.answer.next.grant is None


def test_a_refused_completion_claims_nothing() -> None:
    scene = given(started(S1), started(S2), plan(), *step(A), *step(B), claimed(A, by=S1))

    then = scene.when(c.Complete(A, S2, claim_next=True))

    then.refused(errors.NotHolder)
    assert "StepClaimed" not in then.kinds


def test_a_heartbeat_with_a_shorter_lease_keeps_the_expiry_granted() -> None:
    """MCP Agent Mail's lifecycle tests renew with a shorter lease: tasks_claim says a
    heartbeat extends the lease, so the expiry never moves earlier."""
    then = given(*_two_sessions_and(step(A)), claimed(A, by=S1, expires_in=600)).when(
        c.Heartbeat(A, S1, lease_seconds=5))

    assert then.answer.expires_at == from_now(600)
    assert then.one(ev.LeaseRenewed).expires_at == from_now(600)
