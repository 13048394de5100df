"""OpenAPI documentation of each route's error answers (all share the ErrorOut body)."""

from typing import Any

from planledger.api.schemas import ErrorOut

_DEFAULTS = {
    401: "No token, or a token this server did not sign.",
    403: "A valid token that may not do this (another session's, or not the admin's).",
    404: "Unknown id (the body's reason says which: unknown_step, unknown_plan, ...).",
    409: "Refused by the ledger; the body names the reason and who or what is in the way.",
    422: "Bad input; the message says which field and why.",
    503: "The store is busy (contention or unreachable); retry.",
}


def errors(*codes: int, **described: str) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: `errors(404, e409="...")` documents 404, a 409 and 503.
    FastAPI documents the 422 of any route that takes input by itself."""
    chosen = {c: _DEFAULTS[c] for c in codes}
    chosen.update({int(k.removeprefix("e")): v for k, v in described.items()})
    chosen.setdefault(503, _DEFAULTS[503])  # any route may meet a busy store
    chosen.setdefault(400, "The body is not valid JSON.")  # any route that reads a body
    if 401 in chosen:  # a route acting for a session meets one that has ended
        chosen.setdefault(409, "session_ended: the token's session has ended.")
    return {code: {"model": ErrorOut, "description": text}
            for code, text in sorted(chosen.items())}
