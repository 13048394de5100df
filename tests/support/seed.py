"""The seed's fixture lives in `replays/fixture.py` (the demo seeds the same plan)."""

from planledger.replays.fixture import AUTH_REFRESH_STEPS, CONSTRAINTS, PLAN, seed_auth_refresh

__all__ = ["AUTH_REFRESH_STEPS", "CONSTRAINTS", "PLAN", "seed_auth_refresh"]
