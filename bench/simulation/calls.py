"""What an agent of a simulated world sends, and what it is answered: the world makes them,
its checks judge them."""

from dataclasses import dataclass
from typing import Any

Reply = tuple[int, dict[str, Any]]  # (status, body) as an HTTP caller would read it


@dataclass(frozen=True)
class Request:
    op: str
    actor: str | None
    step: str | None = None
    plan: str | None = None
    lease: int = 60
    fence: int | None = None
    key: str | None = None  # an idempotency key
    access: str | None = None  # a session start: the access key it is started with
