"""The review gate (four eyes), given plain events: a completion that waits in review, the
reviewer's claim and verdict, and the rules a reviewer is held to."""

import dataclasses

import pytest

from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import SessionId, StepId
from tests.support import OPERATOR
from tests.support.given import (
    claimed,
    from_now,
    given,
    plan,
    started,
    step,
    submitted,
)

A, B = StepId("A"), StepId("B")
AUTHOR, REVIEWER, OTHER = SessionId("S1"), SessionId("S2"), SessionId("S3")


def _keyed(session: str, key: str | None) -> ev.SessionStarted:
    return dataclasses.replace(started(session), key=key, role="worker" if key else None)


def _reviewed_plan(*more: ev.LedgerEvent, keys: tuple[str | None, ...] = (None, None, None),
                   ) -> list[ev.LedgerEvent]:
    """A plan that requires reviews: B waits on A; A is claimed by its author."""
    made = dataclasses.replace(plan(), review_required=True)
    sessions = [_keyed(s, k) for s, k in zip((AUTHOR, REVIEWER, OTHER), keys, strict=True)]
    return [*sessions, made, *step(A), *step(B, after=[A]), claimed(A, by=AUTHOR), *more]


def test_completing_a_step_that_needs_review_submits_it_and_keeps_dependents_blocked() -> None:
    scene = given(*_reviewed_plan())
    then = scene.when(c.Complete(A, AUTHOR))

    assert then.answer.status == "in_review"
    assert then.kinds == ["StepSubmitted"]
    state = scene.store.step(A)
    assert (state.status, state.holder, state.author) == ("in_review", None, AUTHOR)
    scene.when(c.Claim(B, OTHER)).refused(errors.Blocked)


def test_a_step_of_its_own_needing_review_is_submitted_in_a_plan_without_the_setting() -> None:
    added, opened = step(A)
    marked = dataclasses.replace(added, review_required=True)
    scene = given(started(AUTHOR), plan(), marked, opened, claimed(A, by=AUTHOR))

    assert scene.when(c.Complete(A, AUTHOR)).answer.status == "in_review"


def test_approval_makes_the_step_done_and_unblocks_its_dependents() -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR)))
    then = scene.when(c.Review(A, REVIEWER, "approve"))

    assert then.answer.status == "done"
    reviewed = then.one(ev.StepReviewed)
    assert (reviewed.verdict, reviewed.author, reviewed.session_id) == (
        "approve", AUTHOR, REVIEWER)
    assert scene.when(c.Claim(B, OTHER)).answer.step_id == B


def test_rejection_reopens_the_step_and_hands_the_note_to_its_next_claimer() -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR)))
    then = scene.when(c.Review(A, REVIEWER, "reject", "the retry loop never backs off"))

    assert then.answer.status == "open"
    assert then.kinds == ["StepReviewed", "StepNoted"]
    grant = scene.when(c.Claim(A, OTHER)).answer
    assert [(n.by, n.text, n.after) for n in grant.notes] == [
        (REVIEWER, "the retry loop never backs off", "reject")]


def test_the_author_cannot_review_its_own_work_and_the_refusal_is_recorded() -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR)))
    then = scene.when(c.Review(A, AUTHOR, "approve"))

    refusal = then.refused(errors.OwnWork)
    assert "four eyes" in str(refusal) and AUTHOR in str(refusal)
    refused = then.one(ev.ReviewRefused)
    assert (refused.reason, refused.step_id, refused.originator_id) == ("own_work", A, AUTHOR)
    assert scene.store.step(A).status == "in_review"


def test_a_session_started_with_the_authors_key_cannot_review_it() -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR), keys=("ci-bot", "ci-bot", None)))
    then = scene.when(c.Review(A, REVIEWER, "approve"))

    refusal = then.refused(errors.OwnWork)
    assert refusal.same_key == "ci-bot" and 'key "ci-bot"' in str(refusal)
    assert then.one(ev.ReviewRefused).reason == "same_key"
    assert scene.when(c.Review(A, OTHER, "approve")).answer.status == "done"


def test_a_review_of_a_step_not_in_review_is_refused_naming_its_status() -> None:
    then = given(*_reviewed_plan()).when(c.Review(A, REVIEWER, "approve"))

    refusal = then.refused(errors.NotInReview)
    assert refusal.status == "in_progress" and "in_progress, not in review" in str(refusal)
    assert then.one(ev.ReviewRefused).reason == "not_in_review"


@pytest.mark.parametrize("verdict", ["", "APPROVE", "lgtm"])
def test_an_unknown_verdict_is_refused_before_anything_is_written(verdict: str) -> None:
    then = given(*_reviewed_plan(submitted(A, by=AUTHOR))).when(
        c.Review(A, REVIEWER, verdict))

    assert "verdicts are approve, reject" in str(then.refused(errors.InvalidInput))
    assert then.events == []


def test_a_step_in_review_cannot_be_claimed_completed_or_released() -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR)))

    assert "is in review" in str(scene.when(c.Claim(A, OTHER)).refused(errors.InReview))
    scene.when(c.Complete(A, AUTHOR)).refused(errors.InReview)
    scene.when(c.Release(A, AUTHOR)).refused(errors.InReview)


def test_claim_next_for_review_hands_out_another_sessions_work_never_ones_own() -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR)))

    own = scene.when(c.ClaimNext("p", AUTHOR, review=True)).answer
    assert own.grant is None and own.review
    taken = scene.when(c.ClaimNext("p", REVIEWER, review=True)).answer
    assert taken.grant is not None and taken.grant.review
    assert (taken.grant.step_id, taken.grant.fence) == (A, 2)
    state = scene.store.step(A)
    assert (state.status, state.holder) == ("in_review", REVIEWER)


def test_a_taken_review_is_the_reviewers_alone_until_its_lease_lapses() -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR)))
    assert scene.when(c.Claim(A, REVIEWER, review=True)).answer.review

    assert scene.when(c.ClaimNext("p", OTHER, review=True)).answer.grant is None
    bounced = scene.when(c.Review(A, OTHER, "approve"))
    assert bounced.refused(errors.AlreadyClaimed).holder == REVIEWER
    assert bounced.one(ev.ReviewRefused).reason == "held"
    scene.clock.advance(61)  # the review lease (the scene's default, 60 s) has lapsed
    assert scene.when(c.Review(A, OTHER, "approve")).answer.status == "done"


def test_the_reviewers_repeat_claim_renews_its_lease_without_shortening_it() -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR)))
    first = scene.when(c.Claim(A, REVIEWER, lease_seconds=600, review=True)).answer
    again = scene.when(c.Claim(A, REVIEWER, lease_seconds=30, review=True)).answer

    assert again.renewed and again.fence == first.fence
    assert again.expires_at == first.expires_at == from_now(600)


@pytest.mark.parametrize("taken", [False, True])
def test_a_step_in_review_cannot_be_dropped_by_anyone_even_without_a_fence(taken: bool) -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR)))
    if taken:
        scene.when(c.Claim(A, REVIEWER, review=True))

    for who in (AUTHOR, REVIEWER, OTHER, OPERATOR):  # the author would skip the four eyes
        scene.when(c.Drop(A, who)).refused(errors.InReview)
    assert scene.store.step(A).status == "in_review"
    scene.when(c.Claim(B, OTHER)).refused(errors.Blocked)


def test_a_reviewers_plain_claim_is_refused_and_says_to_renew_with_review() -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR)))
    first = scene.when(c.Claim(A, REVIEWER, lease_seconds=60, review=True)).answer
    scene.clock.advance(30)

    refused = scene.when(c.Claim(A, REVIEWER, lease_seconds=600)).refused(errors.InReview)
    assert "review=true" in str(refused)
    assert scene.store.step(A).expires_at == first.expires_at  # the review lease as it was


def test_a_reviewers_heartbeat_renews_its_review_and_anothers_names_the_reviewer() -> None:
    scene = given(*_reviewed_plan(submitted(A, by=AUTHOR)))
    first = scene.when(c.Claim(A, REVIEWER, lease_seconds=60, review=True)).answer
    assert first.ref == "p#1"
    scene.clock.advance(30)

    renewed = scene.when(c.Heartbeat(A, REVIEWER, lease_seconds=600)).answer
    assert (renewed.renewed, renewed.review, renewed.fence) == (True, True, first.fence)
    assert renewed.expires_at == from_now(630) and renewed.ref == "p#1"
    assert scene.store.step(A).status == "in_review"
    other = scene.when(c.Heartbeat(A, OTHER)).refused(errors.NotHolder)
    assert REVIEWER in str(other)


def test_claim_next_for_review_does_not_wait() -> None:
    then = given(*_reviewed_plan()).when(
        c.ClaimNext("p", REVIEWER, wait_seconds=5, review=True))

    assert then.refused(errors.InvalidInput).field == "wait_seconds"
