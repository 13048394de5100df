"""Each call of the HTTP API as the request that carries it: what `RemoteClient` sends, and
what the command line sends with `--url`. The routes (`routes_*.py`) are the other half;
the contract tests check that every command here reaches its route and answers as on the
embedded store.

A request is made from fields read by name: a ledger command (`REQUESTS`, keyed by the
command's name) or a read (`READS`), or the command line's values under the same names.
Standard library only (no ledger, no schemas), so that a call of the command line to a
server loads no more than it sends.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple
from urllib.parse import quote


class Request(NamedTuple):
    method: str
    path: str
    body: dict[str, Any] | None = None
    params: dict[str, Any] | None = None


def _part(text: str) -> str:
    return quote(text, safe="")


def _step_of(new: Any) -> dict[str, Any]:
    return {"key": new.key, "title": new.title, "body": new.body,
            "depends_on": list(new.depends_on),
            **({"paths": _paths(new.paths)} if new.paths else {}), **_settings(new),
            **_relations(new)}


def _relations(new: Any) -> dict[str, Any]:
    """A new step's relations and arrival (ledger.commands.NewStep's), as the API takes
    them (when set); the command line's values carry only some of them."""
    found: dict[str, Any] = {name: value for name in ("parent", "discovered_from", "note")
                             if (value := getattr(new, name, None)) is not None}
    if labels := getattr(new, "labels", None):
        found["labels"] = list(labels)
    if links := getattr(new, "links", None):
        found["links"] = [k if isinstance(k, dict) else {"kind": k.kind, "target": k.target}
                          for k in links]
    if getattr(new, "done", False):
        found["done"] = True
    return found


def _settings(new: Any) -> dict[str, Any]:
    """A new step's priority and review setting, as the API takes them (when set)."""
    return {**({"priority": new.priority} if new.priority is not None else {}),
            **({"review": "required"} if getattr(new, "review_required", False) else {})}


def _plan(command: Any) -> dict[str, Any]:
    return {"slug": command.slug, "title": command.title,
            "constraints": dict(command.constraints),
            "steps": [_step_of(s) for s in command.steps],
            **({"require_checks_pass": True} if command.require_checks_pass else {}),
            **({"review": "required"} if command.review_required else {})}


def _paths(paths: Sequence[Any] | None) -> list[dict[str, str]] | None:
    """Reserved paths as the API takes them: each a ledger PathSpec, or already a record
    ({"pattern", "mode"}: the command line's)."""
    if paths is None:
        return None
    return [p if isinstance(p, dict) else p.as_record() for p in paths]


def _closing(action: str) -> Callable[[Any], Request]:
    """A closing call on a step: its fence (if any) in the body."""
    return lambda f: Request("POST", f"/api/steps/{_part(f.step_id)}/{action}",
                             {"fence": f.fence, "note": f.note})


def _complete(f: Any) -> Request:
    """A completion: a closing call, with its evidence (a ledger Evidence, or already a
    record: the command line's) when it has some."""
    request = _closing("complete")(f)
    evidence = f.evidence if f.evidence is None or isinstance(f.evidence, dict) \
        else f.evidence.as_record()
    follow = ({"claim_next": True, "lease_seconds": f.lease_seconds}
              if getattr(f, "claim_next", False) else {})
    return request._replace(body={**(request.body or {}), "evidence": evidence, **follow})


# By the ledger command's name (ledger.commands: `Command.name`).
REQUESTS: Mapping[str, Callable[[Any], Request]] = {
    "session.start": lambda f: Request("POST", "/api/sessions", {
        "name": f.session_name, "cwd": f.cwd, "source": f.source, "model": f.model}),
    "session.end": lambda f: Request("POST", f"/api/sessions/{_part(f.actor)}/end",
                                     {"findings": f.findings}),
    "plan.create": lambda f: Request("POST", "/api/plans", _plan(f)),
    "step.add": lambda f: Request("POST", f"/api/plans/{_part(f.plan)}/steps", {
        "title": f.title, "body": f.body, "depends_on": list(f.depends_on),
        "paths": _paths(f.paths), **_settings(f), **({"key": f.key} if f.key else {}),
        **_relations(f)}),
    "step.revise": lambda f: Request("PATCH", f"/api/steps/{_part(f.step_id)}", {
        "title": f.title, "body": f.body, "paths": _paths(f.paths)}),
    "step.depend": lambda f: Request("POST", f"/api/steps/{_part(f.step_id)}/dependencies",
                                     {"depends_on": list(f.depends_on)}),
    "ready": lambda f: Request("POST", f"/api/plans/{_part(f.plan)}/ready", None,
                               {"limit": f.limit} if f.limit else None),
    "claim": lambda f: Request("POST", f"/api/steps/{_part(f.step_id)}/claim", {
        "lease_seconds": f.lease_seconds, "paths": _paths(f.paths) or None,
        "review": f.review or None}),
    "heartbeat": lambda f: Request("POST", f"/api/steps/{_part(f.step_id)}/heartbeat",
                                   {"lease_seconds": f.lease_seconds}),
    "claim_next": lambda f: Request("POST", f"/api/plans/{_part(f.plan)}/claim-next", {
        "lease_seconds": f.lease_seconds, "wait_seconds": f.wait_seconds or None,
        "review": f.review or None}),
    "complete": _complete,
    "release": _closing("release"),
    "drop": _closing("drop"),
    "review": lambda f: Request("POST", f"/api/steps/{_part(f.step_id)}/review",
                                {"verdict": f.verdict, "note": f.note}),
    "reopen": lambda f: Request("POST", f"/api/steps/{_part(f.step_id)}/reopen"),
    "note": lambda f: Request("POST", f"/api/steps/{_part(f.step_id)}/notes",
                              {"text": f.text}),
    "force_release": lambda f: Request("POST",
                                       f"/api/steps/{_part(f.step_id)}/force-release"),
    "key.issue": lambda f: Request("POST", "/api/keys", {"name": f.key_name,
                                                         "role": f.role}),
    "key.revoke": lambda f: Request("POST", f"/api/keys/{_part(f.key_name)}/revoke"),
}

# The reads that act for nobody, by name.
READS: Mapping[str, Callable[[Any], Request]] = {
    "plans": lambda f: Request("GET", "/api/plans"),
    "plan": lambda f: Request("GET", f"/api/plans/{_part(f.plan)}"),
    "ready": lambda f: Request("GET", f"/api/plans/{_part(f.plan)}/ready"),
    "step": lambda f: Request("GET", f"/api/steps/{_part(f.step_id)}"),
    "session": lambda f: Request("GET", f"/api/sessions/{_part(f.session_id)}"),
    "log": lambda f: Request("GET", "/api/log", None, {"after": f.after, "limit": f.limit}),
    "keys": lambda f: Request("GET", "/api/keys"),
    "timeline": lambda f: Request("GET", "/api/timeline", None, {
        k: v for k, v in (("plan", f.plan), ("session", list(f.sessions or ()))) if v}),
    "paths.check": lambda f: Request("POST", "/api/reservations/check", {
        "paths": list(f.patterns or ()), "files": list(f.file or ()),
        "exclusive_only": f.exclusive_only, "but": f.but}),
}


def request_for(command: Any) -> Request:
    """The request that carries `command` (a ledger command); its actor travels as the
    bearer token."""
    return sent(REQUESTS[command.name](command))


def sent(request: Request) -> Request:
    """`request` as it is sent: its body without the fields left out (None)."""
    body = request.body
    return request._replace(body={k: v for k, v in body.items() if v is not None}
                            if body else None)
