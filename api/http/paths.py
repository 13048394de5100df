"""Each command as the HTTP request whose route builds that same command again: what
`RemoteClient` sends. The routes (`routes_*.py`) are the other half; the contract tests
check that every command here reaches its route and answers as on the embedded store."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote

from planledger.ledger import commands as c
from planledger.ledger.domain.paths import PathSpec

Request = tuple[str, str, dict[str, Any] | None]  # method, path, JSON body


def _part(text: str) -> str:
    return quote(text, safe="")


def _plan(command: c.CreatePlan) -> dict[str, Any]:
    steps = [{"key": s.key, "title": s.title, "body": s.body, "depends_on": list(s.depends_on),
              **({"paths": _paths(s.paths)} if s.paths else {})}
             for s in command.steps]
    return {"slug": command.slug, "title": command.title,
            "constraints": dict(command.constraints), "steps": steps}


def _paths(paths: Sequence[PathSpec] | None) -> list[dict[str, str]] | None:
    return None if paths is None else [p.as_record() for p in paths]


def _step(action: str) -> Callable[[Any], Request]:
    """A closing call on a step: its fence (if any) in the body."""
    return lambda cmd: ("POST", f"/api/steps/{_part(cmd.step_id)}/{action}",
                        {"fence": cmd.fence, "note": cmd.note})


REQUESTS: Mapping[type[c.Command[Any]], Callable[[Any], Request]] = {
    c.StartSession: lambda cmd: ("POST", "/api/sessions", {
        "name": cmd.session_name, "cwd": cmd.cwd, "source": cmd.source, "model": cmd.model}),
    c.EndSession: lambda cmd: ("POST", f"/api/sessions/{_part(cmd.actor)}/end",
                               {"findings": cmd.findings}),
    c.CreatePlan: lambda cmd: ("POST", "/api/plans", _plan(cmd)),
    c.AddStep: lambda cmd: ("POST", f"/api/plans/{_part(cmd.plan)}/steps", {
        "title": cmd.title, "body": cmd.body, "depends_on": list(cmd.depends_on),
        "paths": _paths(cmd.paths)}),
    c.ReviseStep: lambda cmd: ("PATCH", f"/api/steps/{_part(cmd.step_id)}",
                               {"title": cmd.title, "body": cmd.body,
                                "paths": _paths(cmd.paths)}),
    c.DeclareDependencies: lambda cmd: (
        "POST", f"/api/steps/{_part(cmd.step_id)}/dependencies",
        {"depends_on": list(cmd.depends_on)}),
    c.ListReady: lambda cmd: ("POST", f"/api/plans/{_part(cmd.plan)}/ready"
                                      + (f"?limit={cmd.limit}" if cmd.limit else ""), None),
    c.Claim: lambda cmd: ("POST", f"/api/steps/{_part(cmd.step_id)}/claim",
                          {"lease_seconds": cmd.lease_seconds,
                           "paths": _paths(cmd.paths) or None}),
    c.Heartbeat: lambda cmd: ("POST", f"/api/steps/{_part(cmd.step_id)}/heartbeat",
                              {"lease_seconds": cmd.lease_seconds}),
    c.ClaimNext: lambda cmd: ("POST", f"/api/plans/{_part(cmd.plan)}/claim-next",
                              {"lease_seconds": cmd.lease_seconds,
                               "wait_seconds": cmd.wait_seconds or None}),
    c.Complete: _step("complete"),
    c.Release: _step("release"),
    c.Drop: _step("drop"),
    c.Reopen: lambda cmd: ("POST", f"/api/steps/{_part(cmd.step_id)}/reopen", None),
    c.AddNote: lambda cmd: ("POST", f"/api/steps/{_part(cmd.step_id)}/notes",
                            {"text": cmd.text}),
    c.ForceRelease: lambda cmd: ("POST", f"/api/steps/{_part(cmd.step_id)}/force-release",
                                 None),
    c.IssueKey: lambda cmd: ("POST", "/api/keys", {"name": cmd.key_name, "role": cmd.role}),
    c.RevokeKey: lambda cmd: ("POST", f"/api/keys/{_part(cmd.key_name)}/revoke", None),
}
assert set(REQUESTS) == set(c.COMMANDS), "every command has a route"


def request_for(command: c.Command[Any]) -> Request:
    """The request that carries `command`; its actor travels as the bearer token."""
    method, path, body = REQUESTS[type(command)](command)
    return method, path, {k: v for k, v in body.items() if v is not None} if body else None
