"""The seed's fixture: plan auth-refresh, six steps, steps 1-4 done (shared/seed).

Tests import it from here (`tests/support/seed.py` re-exports it), so the demo and the
tests seed one and the same plan.
"""

from planledger.ledger.application import Ledger, NewStep
from planledger.ledger.domain.ids import StepId

PLAN = "auth-refresh"
PLAN_TITLE = "Refresh-token rotation"
AUTH_REFRESH_STEPS = [
    "Add the token_families table and the refresh-token store",
    "Issue a rotating token pair from POST /auth/refresh",
    "Detect refresh-token reuse and revoke the whole family",
    "Set HttpOnly, Secure, SameSite cookies on the auth responses",
    "Rate-limit POST /auth/refresh (per-IP and per-family)",
    "Emit metrics and an alert for refresh-reuse revocations",
]
CONSTRAINTS = {
    "rate-limit-not-in-memory": (
        "In-memory rate limit on the refresh endpoint resets per instance; use shared storage"
    ),
    "reuse-revokes-family": (
        "A reused refresh token revokes its whole token family, not just the one token"
    ),
}


def seed_auth_refresh(ledger: Ledger, *, race: bool = True) -> list[StepId]:
    """Create the plan; steps 1-4 done; 5 and 6 claimable when `race` (6 waits on 4),
    else only 5 (6 waits on 5). Returns the six step ids in order."""
    specs = [NewStep(AUTH_REFRESH_STEPS[0], key="s1")]
    for i in range(1, 6):
        dep = "s4" if (i == 5 and race) else f"s{i}"
        specs.append(NewStep(AUTH_REFRESH_STEPS[i], key=f"s{i + 1}", depends_on=(dep,)))
    worker = ledger.start_session("seeder")
    _, step_ids = ledger.create_plan(PLAN, PLAN_TITLE, CONSTRAINTS, specs, actor=worker.id)
    for step_id in step_ids[:4]:
        ledger.claim(step_id, worker.id)
        ledger.complete(step_id, worker.id)
    ledger.end_session(worker.id)
    return step_ids
