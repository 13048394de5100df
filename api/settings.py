"""How a planledger server is configured: options over environment variables over defaults.

| setting | option | environment |
| --- | --- | --- |
| store | `--db` | `PLANLEDGER_DB` (default `./.planledger/ledger.sqlite`) |
| bind address | `--host` | `PLANLEDGER_HOST` (default 127.0.0.1: this machine only) |
| port | `--port` | `PLANLEDGER_PORT` (default 8765) |
| default lease | `--lease-default` | `PLANLEDGER_LEASE_DEFAULT` (seconds, default 900) |
| secret | — | `PLANLEDGER_SECRET` (see infra.secret) |
| admin token | — | `PLANLEDGER_ADMIN_TOKEN` (unset: no admin over the API; 32 characters or more) |
| steps per request | — | `PLANLEDGER_MAX_STEPS_PER_REQUEST` (default 1000, up to 100000) |
| allowed hosts | — | `PLANLEDGER_ALLOWED_HOSTS` (comma-separated names; api.http.origin) |
| unused MCP sessions end after | — | `PLANLEDGER_MCP_FRESH_SECONDS` (default 60) |
| MCP sessions per client address | — | `PLANLEDGER_MCP_SESSIONS_PER_ADDRESS` (default 64) |
| connections at once | — | `PLANLEDGER_MAX_CONNECTIONS` (default 1000, or fewer: see below) |
| console streams at once | — | `PLANLEDGER_MAX_CONSOLE_STREAMS` (default 100) |

Steps per request caps the steps one plan creation may carry (HTTP, MCP `plans_create`,
`planledger plan create`): a plan is written in one transaction, and while it is the
store takes no other write, so a huge plan holds up every agent's claims (figure:
bench/findings.md). Above the cap the request is refused (422 naming the cap and this
setting); a longer plan is created with the first steps and grown by adding steps.

Connections at once bounds the connections a server holds. Each is an open file, and
`planledger serve` raises the limit on open files to the most the system allows
(api.open_files). The default is 1000, or the open-file limit less `FILES_KEPT` where that
is smaller, so the store, the logs and the event loop always have files to open. A
request that arrives while the server holds as many connections is answered 503 and its
connection closed. A higher setting than the open-file limit leaves room for is refused at
start.

Console streams at once bounds the open consoles (`/api/console/events`) the server follows
the log for: each message is built for and written to every one of them, so many open
streams slow every claim (figure: bench/findings.md). One more is answered 503 with
Retry-After; a stream's
place is free again the moment it closes.

The admin token may release any step and issue keys, so a guessable one is refused at start
(under `MIN_ADMIN_TOKEN` characters), as a short secret is (infra.secret).
"""

import os
from dataclasses import dataclass

from planledger.ledger.domain.claims import DEFAULT_LEASE_SECONDS, check_lease
from planledger.ledger.domain.errors import InvalidInput
from planledger.ledger.domain.plans import MAX_STEPS_PER_PLAN
from planledger.ledger.storage import resolve_db

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
DEFAULT_MAX_STEPS_PER_REQUEST = 1_000
MAX_STEPS_SETTING = "PLANLEDGER_MAX_STEPS_PER_REQUEST"
MIN_ADMIN_TOKEN = 32  # characters: `openssl rand -hex 16` makes one
DEFAULT_FRESH_SECONDS = 60.0  # api.mcp.session_watch
DEFAULT_PER_ADDRESS = 64
MAX_CONNECTIONS_SETTING = "PLANLEDGER_MAX_CONNECTIONS"
DEFAULT_MAX_CONNECTIONS = 1_000
CONSOLE_STREAMS_SETTING = "PLANLEDGER_MAX_CONSOLE_STREAMS"
DEFAULT_MAX_CONSOLE_STREAMS = 100
# Open files kept beside the connections: the store's (a SQLite database, its WAL and
# shared memory, per pooled connection), the secret and checkpoint files, the logs, the
# event loop's own.
FILES_KEPT = 64


@dataclass(frozen=True)
class Settings:
    db: str
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    lease_default: int = DEFAULT_LEASE_SECONDS
    admin_token: str | None = None
    max_steps_per_request: int = DEFAULT_MAX_STEPS_PER_REQUEST
    # Host names besides localhost, IP addresses and the bind address that requests may
    # be sent to (a proxy's public name); "*": any (api.http.origin).
    allowed_hosts: tuple[str, ...] = ()
    # MCP over HTTP (api.mcp.session_watch): a session that sent nothing after its
    # handshake ends this many seconds after it began; one address holds at most so many.
    mcp_fresh_seconds: float = DEFAULT_FRESH_SECONDS
    mcp_sessions_per_address: int = DEFAULT_PER_ADDRESS
    # Connections the HTTP server holds at once (uvicorn's `limit_concurrency`).
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    # Console streams followed at once (api.console.slots).
    max_console_streams: int = DEFAULT_MAX_CONSOLE_STREAMS

    def __post_init__(self) -> None:
        token = self.admin_token
        if token is not None and len(token) < MIN_ADMIN_TOKEN:
            raise ValueError(f"PLANLEDGER_ADMIN_TOKEN is {len(token)} characters; at least "
                             f"{MIN_ADMIN_TOKEN} are needed (make one with "
                             "`openssl rand -hex 32`)")

    def __repr__(self) -> str:
        # Secrets never reach a log line through a repr.
        return (f"Settings(db={self.db!r}, host={self.host!r}, port={self.port}, "
                f"lease_default={self.lease_default}, "
                f"max_steps_per_request={self.max_steps_per_request})")

    def check_steps_per_request(self, steps: int) -> None:
        """Refuse a plan creation carrying more steps than this server takes at once."""
        cap = self.max_steps_per_request
        if steps > cap:
            raise InvalidInput("steps", f"{steps} steps in one request; this server takes at "
                               f"most {cap} (create the plan with up to {cap} and add the "
                               f"rest as steps, or raise {MAX_STEPS_SETTING} on the server)")


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
    lease_default: int | None = None, open_files: int | None = None,
) -> Settings:
    """Settings from the given values, else the environment, else the defaults.
    `open_files`: how many files the serving process may open (api.open_files), which
    bounds its connections; None where it is not known or nothing is served."""
    lease = lease_default or _env_int("PLANLEDGER_LEASE_DEFAULT", DEFAULT_LEASE_SECONDS)
    return Settings(
        db=resolve_db(db),
        host=host or os.environ.get("PLANLEDGER_HOST") or DEFAULT_HOST,
        port=port or _env_int("PLANLEDGER_PORT", DEFAULT_PORT),
        lease_default=check_lease(lease),
        admin_token=os.environ.get("PLANLEDGER_ADMIN_TOKEN") or None,
        max_steps_per_request=_max_steps(),
        allowed_hosts=tuple(n.strip() for n in os.environ.get(
            "PLANLEDGER_ALLOWED_HOSTS", "").split(",") if n.strip()),
        mcp_fresh_seconds=_positive("PLANLEDGER_MCP_FRESH_SECONDS", DEFAULT_FRESH_SECONDS),
        mcp_sessions_per_address=int(_positive("PLANLEDGER_MCP_SESSIONS_PER_ADDRESS",
                                               DEFAULT_PER_ADDRESS)),
        max_connections=_max_connections(open_files),
        max_console_streams=int(_positive(CONSOLE_STREAMS_SETTING,
                                          DEFAULT_MAX_CONSOLE_STREAMS)),
    )


def _positive(name: str, default: float) -> float:
    value = _env_int(name, int(default))
    if value < 1:
        raise ValueError(f"{name}={value} is out of range: at least 1")
    return value


def _max_steps() -> int:
    cap = _env_int(MAX_STEPS_SETTING, DEFAULT_MAX_STEPS_PER_REQUEST)
    if not 1 <= cap <= MAX_STEPS_PER_PLAN:
        raise ValueError(f"{MAX_STEPS_SETTING}={cap} is out of range: 1..{MAX_STEPS_PER_PLAN}")
    return cap


def _max_connections(open_files: int | None) -> int:
    """The connections a server may hold: the setting, else the default, and never more
    than `open_files` (None: no limit) leaves once `FILES_KEPT` are set aside."""
    room = None if open_files is None else max(1, open_files - FILES_KEPT)
    cap = _env_int(MAX_CONNECTIONS_SETTING, min(DEFAULT_MAX_CONNECTIONS,
                                                room or DEFAULT_MAX_CONNECTIONS))
    if cap < 1:
        raise ValueError(f"{MAX_CONNECTIONS_SETTING}={cap} is out of range: at least 1")
    if room is not None and cap > room:
        raise ValueError(f"{MAX_CONNECTIONS_SETTING}={cap} is more than this process can "
                         f"hold: it may open {open_files} files and keeps {FILES_KEPT} for "
                         f"the store and the logs, so at most {room} (raise `ulimit -n`)")
    return cap
