"""Handoff notes, given plain events: a note alone or with a release, drop or completion,
and the next claimer reading the notes left since the step's last claim."""

from planledger.ledger import commands as c
from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.ids import SessionId, StepId
from planledger.ledger.domain.state import Note
from tests.support import OPERATOR
from tests.support.fakes import EPOCH
from tests.support.given import claimed, given, plan, started, step

A = StepId("A")
S1, S2, S3 = SessionId("S1"), SessionId("S2"), SessionId("S3")


def _scene(*more: ev.LedgerEvent) -> list[ev.LedgerEvent]:
    return [started(S1), started(S2), started(S3), plan(), *step(A), *more]


def test_a_release_with_a_note_appends_the_note_after_the_release() -> None:
    then = given(*_scene(claimed(A, by=S1))).when(
        c.Release(A, S1, note="blocked on the schema migration; tried X"))
    assert then.kinds == ["StepReleased", "StepNoted"]
    noted = then.one(ev.StepNoted)
    assert (noted.text, noted.after, noted.actor) == (
        "blocked on the schema migration; tried X", "release", S1)


def test_the_next_claimer_reads_the_notes_left_since_the_last_claim() -> None:
    scene = given(*_scene(claimed(A, by=S1)))
    scene.when(c.AddNote(A, S2, "the tests in auth/ are flaky"))
    scene.when(c.Release(A, S1, note="half done: see branch wip-a"))

    grant = scene.when(c.Claim(A, S3)).answer
    assert [(n.by, n.text, n.after) for n in grant.notes] == [
        (S2, "the tests in auth/ are flaky", None),
        (S1, "half done: see branch wip-a", "release")]
    assert all(isinstance(n, Note) and n.at == EPOCH for n in grant.notes)


def test_a_claim_reads_the_notes_once_and_a_heartbeat_none() -> None:
    scene = given(*_scene())
    scene.when(c.AddNote(A, S2, "start with the README"))
    assert [n.text for n in scene.when(c.Claim(A, S1)).answer.notes] == ["start with the README"]
    assert scene.when(c.Heartbeat(A, S1)).answer.notes == ()
    scene.when(c.Release(A, S1))
    assert scene.when(c.Claim(A, S3)).answer.notes == ()  # read by the claim before


def test_a_refused_close_leaves_no_note() -> None:
    then = given(*_scene(claimed(A, by=S1))).when(c.Complete(A, S2, note="done it for you"))
    assert isinstance(then.refusal, errors.NotHolder) and then.events == []


def test_an_operator_notes_and_drops_with_a_reason() -> None:
    then = given(*_scene()).when(c.Drop(A, OPERATOR, note="superseded by step B"))
    assert then.kinds == ["StepDropped", "StepNoted"]
    assert then.one(ev.StepNoted).actor == OPERATOR


def test_an_empty_note_is_refused_naming_the_field() -> None:
    then = given(*_scene()).when(c.AddNote(A, S1, "   "))
    assert isinstance(then.refusal, errors.InvalidInput) and "note" in str(then.refusal)
    assert then.events == []


def test_a_note_on_an_unknown_step_is_refused() -> None:
    then = given(*_scene()).when(c.AddNote(StepId("nope"), S1, "hello"))
    assert isinstance(then.refusal, errors.UnknownStep)
