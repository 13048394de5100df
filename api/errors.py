"""Refusals and failures as answers: one place maps every error to a status and a body.

HTTP sends the pair as the response, MCP turns the body's message into a tool error, and
the CLI prints the message and picks its exit code from the status.
"""

import sys
from typing import Any

from planledger.api.schemas import BlockerOut, ErrorOut
from planledger.ledger.domain import errors as le


class ApiError(Exception):
    """A refusal made by the API itself (identity, idempotency), not by the ledger."""

    status = 400
    reason = "bad_request"


class Unauthorized(ApiError):
    """The call acts for a session but carries no valid token for it."""

    status = 401
    reason = "unauthorized"


class Forbidden(ApiError):
    """The token is valid but not for what the call tries to do."""

    status = 403
    reason = "forbidden"


class IdempotencyKeyReused(ApiError):
    """The idempotency key was first used for a different request."""

    status = 422
    reason = "idempotency_key_reused"


class BadIdempotencyKey(ApiError):
    """The idempotency key is empty, too long or not printable ASCII."""

    status = 422
    reason = "invalid_idempotency_key"


class TooManyStreams(ApiError):
    """The server follows as many console streams as its setting allows."""

    status = 503
    reason = "too_many_streams"


class ConfigError(Exception):
    """The server cannot start with this configuration."""


class Replayed(Exception):
    """A refusal recorded under an idempotency key, answered again as it was first."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        super().__init__(str(body.get("message", "")))


# status and reason code of each ledger refusal; the body's fields come from the error.
_LEDGER: dict[type[le.LedgerError], tuple[int, str]] = {
    le.AlreadyClaimed: (409, "already_claimed"),
    le.Blocked: (409, "blocked"),
    le.Closed: (409, "closed"),
    le.StaleFence: (409, "stale_fence"),
    le.NotHolder: (409, "not_holder"),
    le.HeldElsewhere: (409, "held_elsewhere"),
    le.NotReopenable: (409, "not_reopenable"),
    le.PlanExists: (409, "plan_exists"),
    le.SessionClosed: (409, "session_ended"),
    le.UnknownPlan: (404, "unknown_plan"),
    le.UnknownStep: (404, "unknown_step"),
    le.AmbiguousReference: (422, "ambiguous_reference"),
    le.UnknownSession: (404, "unknown_session"),
    le.InvalidInput: (422, "invalid_input"),
    le.SelfDependency: (422, "self_dependency"),
    le.UnknownDependency: (422, "unknown_dependency"),
    le.DependencyCycle: (422, "dependency_cycle"),
    le.Contention: (503, "contention"),
    le.PathsHeld: (409, "paths_reserved"),
    le.KeyNameTaken: (409, "key_exists"),
    le.UnknownKey: (404, "unknown_key"),
    le.NotPermitted: (403, "forbidden"),
    le.CheckFailed: (409, "check_failed"),
    le.InReview: (409, "in_review"),
    le.NotInReview: (409, "not_in_review"),
    le.OwnWork: (403, "own_work"),
}

BOUNCE_REASONS = frozenset({"already_claimed", "blocked", "closed", "stale_fence", "not_holder",
                            "paths_reserved", "in_review"})


def _fields(error: le.LedgerError) -> dict[str, Any]:
    """The structured facts each refusal carries, under the body's field names."""
    names = ("step_id", "holder", "holder_name", "fence", "status", "session_id", "field",
             "retry_after", "check")
    fields = {n: getattr(error, n) for n in names if getattr(error, n, None) is not None}
    if isinstance(error, le.StaleFence):
        fields["current_fence"] = error.current
    if isinstance(error, le.Blocked):
        fields["blockers"] = [BlockerOut(step_id=b, title=t, status=s, ref=error.refs.get(b))
                              for b, t, s in error.blockers]
    if isinstance(error, le.AmbiguousReference):
        fields["candidates"] = error.candidates
    if isinstance(error, le.UnknownPlan):
        fields["field"] = "plan"
    if isinstance(error, le.NotPermitted):
        fields["needs"] = error.needs
        fields["role"] = error.role
    if isinstance(error, le.PathsHeld):
        fields["holder_step"] = error.holder_step
        fields["patterns"] = error.patterns
    return fields


# What a store failure's own text says, and what the client is told (nothing else of it
# leaves the server: driver messages can name hosts, users and tables).
_STORE_TROUBLE = (
    (("readonly", "read-only"), "the store is read-only: writes are refused until it is "
                                "writable again"),
    (("disk is full", "no space"), "the store is full: writes are refused until space is "
                                   "freed; retry then"),
    (("locked", "busy"), "the store is locked by another process; retry shortly"),
    (("connection failed", "connection refused", "could not connect", "timeout expired",
      "name or service not known"), "cannot connect to the database; retry once it is up"),
    (("terminat", "closed", "connection", "server"), "the connection to the database was "
                                                      "lost; retry shortly"),
)


def store_trouble(error: BaseException) -> str:
    """A message for a failing store that says what is wrong, as far as the error tells."""
    text = str(error).lower()
    for words, message in _STORE_TROUBLE:
        if any(w in text for w in words):
            return message
    return "the store is busy or unreachable; retry shortly"


def status_and_reason(error: le.LedgerError) -> tuple[int, str]:
    """The status and reason a ledger refusal answers (without building its body)."""
    return _LEDGER.get(type(error), (409, "refused"))


def problem(error: BaseException) -> tuple[int, ErrorOut]:
    """The status and body that answer `error`; unknown errors get a clean 500."""
    if isinstance(error, Replayed):
        return error.status, ErrorOut.model_validate(error.body)
    if isinstance(error, ApiError):
        return error.status, ErrorOut(reason=error.reason, message=str(error))
    if isinstance(error, le.LedgerError):
        status, reason = status_and_reason(error)
        return status, ErrorOut(reason=reason, message=str(error), **_fields(error))
    # Here, not at the top: a command line talking to a server never loads the store's.
    import sqlite3

    from eventsourcing.persistence import PersistenceError

    # The PostgreSQL driver's own errors (a pool that cannot connect at all) are store
    # trouble too; looked up only where it was loaded, never imported for the question.
    psycopg = sys.modules.get("psycopg")
    driver_errors = (psycopg.Error,) if psycopg is not None else ()
    if isinstance(error, (PersistenceError, sqlite3.Error, *driver_errors)):
        return 503, ErrorOut(reason="store_unavailable", message=store_trouble(error))
    return 500, ErrorOut(reason="internal", message="internal error; the server log has the "
                         "details")
