"""Access keys, given plain events: issuing and revoking are events in the key's own
stream, the store keeps only a digest, and a name is reused only after a revocation."""

import pytest

from planledger.ledger import commands as c
from planledger.ledger.domain import access, errors
from planledger.ledger.domain import events as ev
from tests.support import OPERATOR
from tests.support.given import given

DIGEST = access.digest_of("plk_" + "x" * 43)


def test_issuing_a_key_records_its_role_and_digest_never_the_key() -> None:
    then = given().when(c.IssueKey("ci-bot", "worker", DIGEST, OPERATOR))
    issued = then.one(ev.KeyIssued)
    assert (issued.name, issued.role, issued.digest, issued.actor) == (
        "ci-bot", "worker", DIGEST, OPERATOR)
    assert issued.originator_id == "key:ci-bot"
    assert then.answer.live and then.answer.role == "worker"


def test_a_live_name_cannot_be_issued_again_but_a_revoked_one_can() -> None:
    scene = given()
    scene.when(c.IssueKey("alice", "planner", DIGEST, OPERATOR))
    assert isinstance(scene.when(c.IssueKey("alice", "reader", DIGEST, OPERATOR)).refusal,
                      errors.KeyNameTaken)
    revoked = scene.when(c.RevokeKey("alice", OPERATOR))
    assert revoked.kinds == ["KeyRevoked"] and not revoked.answer.live
    again = scene.when(c.IssueKey("alice", "reader", DIGEST, OPERATOR))
    assert again.answer.live and again.answer.role == "reader"


def test_revoking_an_unknown_or_revoked_key_is_refused() -> None:
    scene = given()
    assert isinstance(scene.when(c.RevokeKey("nobody", OPERATOR)).refusal, errors.UnknownKey)
    scene.when(c.IssueKey("bob", "worker", DIGEST, OPERATOR))
    scene.when(c.RevokeKey("bob", OPERATOR))
    assert isinstance(scene.when(c.RevokeKey("bob", OPERATOR)).refusal, errors.UnknownKey)


@pytest.mark.parametrize(("name", "role", "digest", "field"), [
    ("", "worker", DIGEST, "name"),
    ("a b", "worker", DIGEST, "name"),
    ("x" * 65, "worker", DIGEST, "name"),
    ("ok", "owner", DIGEST, "role"),
    ("ok", "worker", "not-a-digest", "digest"),
])
def test_a_bad_name_role_or_digest_is_refused_naming_the_field(
        name: str, role: str, digest: str, field: str) -> None:
    refusal = given().when(c.IssueKey(name, role, digest, OPERATOR)).refusal
    assert isinstance(refusal, errors.InvalidInput) and refusal.field == field


def test_roles_include_the_ones_before_them() -> None:
    assert access.allows("admin", "reader") and access.allows("planner", "worker")
    assert not access.allows("worker", "planner") and not access.allows("reader", "worker")
