"""The seed's fixture: plan auth-refresh with six steps (see shared/seed)."""

from ledger.application import Ledger, NewStep
from ledger.domain.ids import StepId

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
}


def seed_auth_refresh(ledger: Ledger, *, race: bool = True) -> list[StepId]:
    """Create the plan; steps 1-4 done; 5 and 6 claimable when `race` (6 waits on 4)."""
    specs = [NewStep(AUTH_REFRESH_STEPS[0], key="s1")]
    for i in range(1, 6):
        dep = "s4" if (i == 5 and race) else f"s{i}"
        specs.append(NewStep(AUTH_REFRESH_STEPS[i], key=f"s{i + 1}", depends_on=[dep]))
    _, step_ids = ledger.create_plan("auth-refresh", "Refresh-token rotation", CONSTRAINTS, specs)
    worker = ledger.start_session("seeder")
    for step_id in step_ids[:4]:
        ledger.claim(step_id, worker.id)
        ledger.complete(step_id, worker.id)
    ledger.end_session(worker.id)
    return step_ids
