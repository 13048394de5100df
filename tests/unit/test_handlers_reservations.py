"""Path reservations, given plain events: declaring a step's paths, a claim reserving them
with its lease and fence, bouncing off another holder's, and claim-next passing by."""

from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import PlanSlug, SessionId, StepId, plan_stream
from planledger.ledger.domain.paths import PathSpec
from planledger.ledger.domain.reservations import RESERVATIONS_STREAM
from tests.support import OPERATOR
from tests.support.given import (
    BEFORE,
    PLAN,
    claimed,
    completed,
    ended,
    given,
    plan,
    started,
    step,
    title_of,
)

A, B, C = StepId("A"), StepId("B"), StepId("C")
S1, S2 = SessionId("S1"), SessionId("S2")
AUTH = PathSpec("internal/auth/**")


def declared(step_id: str, *paths: PathSpec) -> ev.PathsDeclared:
    return ev.PathsDeclared(plan_stream(PlanSlug(PLAN)), 0, BEFORE, None, actor=OPERATOR,
                            step_id=step_id, paths=[p.as_record() for p in paths])


def reserved(step_id: str, by: str, *paths: PathSpec, fence: int = 1) -> ev.PathsReserved:
    return ev.PathsReserved(RESERVATIONS_STREAM, 0, BEFORE, by, actor=by, step_id=step_id,
                            fence=fence, paths=[p.as_record() for p in paths], freed=[])


def _held_by_s2(*more: ev.LedgerEvent, expires_in: float = 60) -> list[ev.LedgerEvent]:
    """S2 holds B, which reserved internal/auth/**; A (declaring `auth.go` files under
    internal/auth) and C (docs) are open."""
    return [started(S1, "agent A"), started(S2, "agent B"), plan(), *step(A), *step(B),
            *step(C), declared(A, PathSpec("internal/auth/token.go")), declared(B, AUTH),
            declared(C, PathSpec("docs/**")), claimed(B, S2, expires_in=expires_in),
            reserved(B, S2, AUTH), *more]


# --- declaring -----------------------------------------------------------------------------


def test_a_step_added_with_paths_declares_them_in_the_same_append() -> None:
    then = given(started(S1), plan()).when(c.AddStep(
        PLAN, "t", OPERATOR, paths=(PathSpec("internal/auth/"), PathSpec("docs", "shared"))))
    assert then.kinds == ["StepAdded", "StepOpened", "PathsDeclared"]
    assert then.answer.step.paths == (PathSpec("internal/auth/**"), PathSpec("docs", "shared"))


def test_a_plan_created_with_paths_declares_each_steps() -> None:
    then = given().when(c.CreatePlan("q", "Q", OPERATOR, steps=(
        c.NewStep("one", paths=(AUTH,)), c.NewStep("two"), c.NewStep("three", paths=(AUTH,)))))
    assert then.kinds == ["PlanCreated", "StepAdded", "StepOpened", "PathsDeclared",
                          "StepAdded", "StepOpened", "StepAdded", "StepOpened",
                          "PathsDeclared"]
    made = then.answer
    assert [made.plan.steps[s].paths for s in made.step_ids] == [(AUTH,), (), (AUTH,)]


def test_revising_only_the_paths_declares_them_anew_and_revises_no_words() -> None:
    scene = given(started(S1), plan(), *step(A), declared(A, AUTH))
    then = scene.when(c.ReviseStep(A, OPERATOR, paths=(PathSpec("cmd/"),)))
    assert then.kinds == ["PathsDeclared"]
    assert then.answer.step.paths == (PathSpec("cmd/**"),)
    both = scene.when(c.ReviseStep(A, OPERATOR, title="new", paths=()))
    assert both.kinds == ["StepRevised", "PathsDeclared"]
    assert (both.answer.step.title, both.answer.step.paths) == ("new", ())


def test_a_bad_path_is_refused_naming_the_field_and_nothing_is_written() -> None:
    then = given(started(S1), plan()).when(c.AddStep(PLAN, "t", OPERATOR,
                                                     paths=(PathSpec("../etc"),)))
    assert then.refused(errors.InvalidInput).field == "paths"
    assert then.events == []


# --- claiming ------------------------------------------------------------------------------


def test_a_claim_reserves_its_steps_paths_and_its_own_with_its_fence() -> None:
    then = given(started(S1), plan(), *step(A), declared(A, PathSpec("docs/**", "shared"))
                 ).when(c.Claim(A, S1, paths=(PathSpec("docs/**"), PathSpec("README.md"))))
    assert then.kinds == ["StepClaimed", "PathsReserved"]
    reservation = then.one(ev.PathsReserved)
    assert (reservation.originator_id, reservation.step_id, reservation.fence) == (
        RESERVATIONS_STREAM, A, 1)
    wanted = (PathSpec("docs/**"), PathSpec("README.md"))  # exclusive, as the claim asked
    assert reservation.paths == [p.as_record() for p in wanted]
    assert then.answer.paths == wanted


def test_a_claim_with_no_paths_reserves_nothing() -> None:
    then = given(*_held_by_s2()).when(c.Claim(B, S2))  # S2's heartbeat, no new paths
    assert then.kinds == ["LeaseRenewed"]
    assert given(started(S1), plan(), *step(A)).when(c.Claim(A, S1)).kinds == ["StepClaimed"]


def test_overlapping_paths_bounce_naming_holder_their_step_and_patterns() -> None:
    then = given(*_held_by_s2()).when(c.Claim(A, S1))
    refusal = then.refused(errors.PathsHeld)
    assert str(refusal) == (f'paths reserved: "internal/auth/**" held by "{S2}" (agent B, '
                            f'step p#2 "{title_of(B)}")')
    assert (refusal.holder, refusal.holder_name, refusal.holder_step) == (S2, "agent B", B)
    assert then.kinds == ["PathsBounced"]
    bounce = then.one(ev.PathsBounced)
    assert (bounce.originator_id, bounce.step_id) == (S1, A)
    assert bounce.conflicts == [{"holder": S2, "step_id": B, "fence": 1,
                                 "patterns": ["internal/auth/**"]}]


def test_a_claims_extra_paths_can_collide_too() -> None:
    then = given(*_held_by_s2()).when(c.Claim(C, S1, paths=(PathSpec("internal/"),)))
    assert then.refused(errors.PathsHeld).patterns == ["internal/auth/**"]


def test_shared_reservations_do_not_exclude_each_other_but_exclude_exclusive_ones() -> None:
    shared = PathSpec("internal/auth/**", "shared")
    scene = given(started(S1), started(S2), plan(), *step(A), *step(B), *step(C),
                  claimed(B, S2), reserved(B, S2, shared))
    assert scene.when(c.Claim(A, S1, paths=(shared,))).kinds == ["StepClaimed",
                                                                  "PathsReserved"]
    then = scene.when(c.Claim(C, S1, paths=(PathSpec("internal/auth/x.go"),)))
    assert then.kinds == ["PathsBounced"]


def test_a_lapsed_holders_reservation_is_free_and_forgotten() -> None:
    then = given(*_held_by_s2(expires_in=-1)).when(c.Claim(A, S1))
    assert then.kinds == ["StepClaimed", "PathsReserved"]
    assert then.one(ev.PathsReserved).freed == [B]


def test_closing_or_ending_the_session_frees_the_reservation() -> None:
    done = given(*_held_by_s2(completed(B, S2))).when(c.Claim(A, S1))
    assert done.kinds == ["StepClaimed", "PathsReserved"]
    gone = given(*_held_by_s2(ended(S2))).when(c.Claim(A, S1))
    assert gone.kinds == ["StepClaimed", "PathsReserved"]


def test_a_sessions_own_reservations_never_exclude_each_other() -> None:
    then = given(*_held_by_s2()).when(c.Claim(A, S2))
    assert then.kinds == ["StepClaimed", "PathsReserved"]


def test_a_heartbeat_with_new_paths_adds_them_to_what_it_holds() -> None:
    then = given(*_held_by_s2()).when(c.Claim(B, S2, paths=(PathSpec("go.mod"),)))
    assert then.kinds == ["LeaseRenewed", "PathsReserved"]
    assert then.answer.paths == (AUTH, PathSpec("go.mod"))
    assert then.one(ev.PathsReserved).fence == 1


def test_a_held_step_bounces_as_ever_before_its_paths_are_judged() -> None:
    then = given(*_held_by_s2()).when(c.Claim(B, S1))
    assert then.kinds == ["ClaimBounced"]


def test_claim_next_passes_by_a_step_whose_paths_are_reserved() -> None:
    then = given(*_held_by_s2()).when(c.ClaimNext(PLAN, S1))
    grant = then.answer.grant
    assert grant is not None and grant.step_id == C
    assert then.kinds == ["StepClaimed", "PathsReserved"]  # A was passed by, not bounced


def test_a_claims_bad_path_is_refused_before_anything_is_decided() -> None:
    then = given(*_held_by_s2()).when(c.Claim(B, S1, paths=(PathSpec("/abs"),)))
    assert then.refused(errors.InvalidInput).field == "paths"
    assert then.events == []  # not even the bounce off B's holder


def test_re_reserving_ones_own_exclusive_pattern_as_shared_shares_it() -> None:
    """MCP Agent Mail's mistake tests: a holder that asks for its pattern as shared gets it
    shared, not silently kept exclusive; another session may then share it."""
    shared = PathSpec("internal/auth/**", "shared")
    d = StepId("D")
    scene = given(*_held_by_s2(*step(d)))
    then = scene.when(c.Claim(B, S2, paths=(shared,)))
    assert then.kinds == ["LeaseRenewed", "PathsReserved"]
    assert then.answer.paths == (shared,) and then.answer.warnings == ()

    beside = scene.when(c.Claim(d, S1, paths=(PathSpec("internal/auth/token.go", "shared"),)))
    assert beside.kinds == ["StepClaimed", "PathsReserved"]


def test_a_new_claim_giving_its_steps_exclusive_pattern_as_shared_says_it_stays() -> None:
    then = given(*_held_by_s2()).when(c.Claim(C, S1, paths=(PathSpec("docs/**", "shared"),)))
    assert then.answer.paths == (PathSpec("docs/**"),)
    assert then.answer.warnings == ('"docs/**" stays exclusive: the step declares it so (its '
                                    "holder may share it by renewing the claim with it as "
                                    "shared)",)


def test_a_claim_of_paths_covering_the_whole_repository_warns_and_still_lands() -> None:
    then = given(started(S1), plan(), *step(A)).when(c.Claim(A, S1, paths=(PathSpec("**/*"),)))
    assert then.kinds == ["StepClaimed", "PathsReserved"]
    assert then.answer.warnings == ('"**/*" reserves the whole repository: while a claim '
                                    "holds it, every claim whose paths meet it bounces; name "
                                    "the directories the step touches instead",)
