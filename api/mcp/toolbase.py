"""What every group of tools shares: the service, the connections, the acting session."""

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import Context

from planledger.api.access import Caller
from planledger.api.client import operator_name
from planledger.api.http.gate import caller_of
from planledger.api.mcp.acting import Connections, mcp_connection, request_scope
from planledger.api.mcp.briefing import plans_in_motion
from planledger.api.runtime import Runtime
from planledger.api.service import Service
from planledger.ledger.domain.errors import InvalidInput
from planledger.ledger.domain.ids import ADMIN, Actor, SessionId, local_operator


class Tools:
    """A group of tools; `tools()` lists the bound methods the server registers."""

    def __init__(self, service: Service, connections: Connections) -> None:
        self.service = service
        self.connections = connections

    @property
    def runtime(self) -> Runtime:
        return self.service.runtime

    def tools(self) -> list[Callable[..., Any]]:
        raise NotImplementedError

    def connection(self, ctx: Context[Any, Any]) -> str | None:
        return self.connections.key(mcp_connection(ctx))

    def caller(self, ctx: Context[Any, Any]) -> Caller:
        """Who the call's transport proved it is: over streamable HTTP, the credential the
        gate read from the request's `Authorization` header (api.http.gate); on stdio, the
        local operator, who holds the store's file and is its admin."""
        scope = request_scope(ctx)
        if scope is None:
            return Caller(local_operator(operator_name()), "admin")
        return caller_of(scope)

    def actor(self, ctx: Context[Any, Any], session_id: str | None, token: str | None,
              ) -> SessionId:
        return self.connections.actor(self.connection(ctx), session_id, token)

    def maybe_actor(self, ctx: Context[Any, Any], session_id: str | None, token: str | None,
                    ) -> SessionId | None:
        return self.connections.maybe_actor(self.connection(ctx), session_id, token)

    def author(self, ctx: Context[Any, Any], session_id: str | None, token: str | None,
               ) -> Actor:
        """Who makes a write that need not be a session's: the admin (its token passed as
        `token`), else the acting session, else the access key the connection was opened
        with; refused when none can be told."""
        if token and not session_id and self.service.identity.is_admin(token):
            return ADMIN
        acting = self.maybe_actor(ctx, session_id, token)
        if acting is not None:
            return Actor(acting)
        caller = self.caller(ctx)
        if caller.actor is not None and caller.session is None and caller.key is not None:
            return caller.actor
        return Actor(self.actor(ctx, session_id, token))

    def plan_or_only(self, plan: str | None) -> str:
        """The named plan, else the only plan in motion; never a guess between several."""
        if plan:
            return plan
        moving = [p.slug for p in plans_in_motion(self.runtime)]
        if len(moving) == 1:
            return moving[0]
        if not moving:
            raise InvalidInput("plan", "no plan is in motion: name one (plans_list shows all)")
        raise InvalidInput("plan", f"{len(moving)} plans are in motion ({', '.join(moving)}): "
                                   "name one")
