"""session_start and session_end: an agent's identity on the ledger."""

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import Field

from planledger.api.mcp.argument_types import SessionArg, Text, TokenArg
from planledger.api.mcp.briefing import briefing
from planledger.api.mcp.schemas import SessionBriefingOut
from planledger.api.mcp.toolbase import Tools
from planledger.api.schemas import SessionEndOut
from planledger.ledger import commands as c

Name = Annotated[str | None, Text, Field(
    max_length=300, description="A label people see on the timeline and the console, e.g. "
    "'agent A'.")]
Where = Annotated[str | None, Text, Field(
    max_length=1000, description="Where you work (kept on your session): your directory, "
    "client or model.")]
Findings = Annotated[str | None, Text, Field(
    max_length=20000, description="What you found or did, in a few lines: kept on your "
    "session's timeline for the next agent and for people.")]
STATELESS = ("This client keeps no MCP connection, so nothing is remembered between calls: "
             "pass token on every call that acts for your session.")


class SessionTools(Tools):
    def tools(self) -> list[Callable[..., Any]]:
        return [self.session_start, self.session_end]

    def session_start(self, ctx: Context[Any, Any], name: Name = None, cwd: Where = None,
                      source: Where = None, model: Where = None) -> SessionBriefingOut:
        """Start your session: call this first. Every claim names a session, and this
        connection acts for the session it started, so the other tools need no session
        arguments. Returns session_id, a secret token (a client that reconnects per call
        passes it as `token` on every call; keep it private) and a briefing: the plans in
        motion with their progress and the constraints their steps must honour. Read the
        constraints before you work. End with session_end when you stop. `cwd`, `source`
        and `model` say where you work; the console and the timeline show them."""
        started = self.service.start_session(self.caller(ctx).starting(
            c.StartSession(name, cwd=cwd, source=source, model=model)))
        connection = self.connection(ctx)
        self.connections.remember(connection, started.session_id)
        brief = briefing(self.runtime, started)
        if connection is None:
            brief.briefing += f"\n{STATELESS}"
        return brief

    def session_end(self, ctx: Context[Any, Any], findings: Findings = None,
                    session_id: SessionArg = None, token: TokenArg = None) -> SessionEndOut:
        """End your session when you stop working: every step it still holds is released
        at once (listed in `released`) so other agents can claim them. Finish or release
        your steps first where you can; an ended session can do nothing more."""
        actor = self.actor(ctx, session_id, token)
        ended = self.service.answer(c.EndSession(actor, findings), SessionEndOut)
        self.connections.forget(actor)
        return ended
