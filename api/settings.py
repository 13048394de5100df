"""How a planledger server is configured: options over environment variables over defaults.

| setting | option | environment |
| --- | --- | --- |
| store | `--db` | `PLANLEDGER_DB` (default `./.planledger/ledger.sqlite`) |
| bind address | `--host` | `PLANLEDGER_HOST` (default 127.0.0.1: this machine only) |
| port | `--port` | `PLANLEDGER_PORT` (default 8765) |
| default lease | `--lease-default` | `PLANLEDGER_LEASE_DEFAULT` (seconds, default 900) |
| secret | — | `PLANLEDGER_SECRET` (see infra.secret) |
| admin token | — | `PLANLEDGER_ADMIN_TOKEN` (unset: no force-release over the API) |
"""

import os
from dataclasses import dataclass

from ledger.domain.claims import DEFAULT_LEASE_SECONDS, check_lease
from ledger.storage import resolve_db

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


@dataclass(frozen=True)
class Settings:
    db: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    lease_default: int = DEFAULT_LEASE_SECONDS
    admin_token: str | None = None

    def __repr__(self) -> str:
        # Secrets never reach a log line through a repr.
        return (f"Settings(db={self.db!r}, host={self.host!r}, port={self.port}, "
                f"lease_default={self.lease_default})")


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a whole number") from None


def load_settings(
    db: str | None = None, host: str | None = None, port: int | None = None,
    lease_default: int | None = None,
) -> Settings:
    """Settings from the given values, else the environment, else the defaults."""
    lease = lease_default or _env_int("PLANLEDGER_LEASE_DEFAULT", DEFAULT_LEASE_SECONDS)
    return Settings(
        db=resolve_db(db),
        host=host or os.environ.get("PLANLEDGER_HOST") or DEFAULT_HOST,
        port=port or _env_int("PLANLEDGER_PORT", DEFAULT_PORT),
        lease_default=check_lease(lease),
        admin_token=os.environ.get("PLANLEDGER_ADMIN_TOKEN") or None,
    )
