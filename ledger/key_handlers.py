"""Handlers of access keys: issue and revoke (ledger.domain.access)."""

from __future__ import annotations  # attempts are defined per command: not evaluated

from datetime import datetime

from planledger.ledger import commands as c
from planledger.ledger.domain import access
from planledger.ledger.domain.claims import Decision
from planledger.ledger.execution import Execution, Outcome


def issue_key(run: Execution, command: c.IssueKey) -> access.KeyState:
    """Record a new key's name, role and digest; a live key of the same name refuses it."""
    who = run.author(command.actor)

    def attempt(now: datetime) -> Outcome[access.KeyState]:
        known = run.store.access_key(command.key_name)
        issued = access.decide_issue_key(known, command.key_name, command.role,
                                         command.digest, now, who)
        return Outcome(Decision([issued]), access.evolve_key(known, issued))

    return run.decide(attempt, access.key_stream(command.key_name))


def revoke_key(run: Execution, command: c.RevokeKey) -> access.KeyState:
    """Revoke the live key of the name: it and every session started with it stop."""
    who = run.author(command.actor)

    def attempt(now: datetime) -> Outcome[access.KeyState]:
        known = run.store.access_key(command.key_name)
        revoked = access.decide_revoke_key(known, command.key_name, now, who)
        return Outcome(Decision([revoked]), access.evolve_key(known, revoked))

    return run.decide(attempt, access.key_stream(command.key_name))
