"""One origin guard for the whole app: API, console and `/mcp`.

A web page the user opens can make the browser send requests to this server: directly
(a cross-site form POST needs no preflight), or through DNS rebinding, where the page's own
host name is made to resolve to 127.0.0.1 so the browser treats the server as the page's
origin. Both are told apart by headers the page cannot forge:

- `Host` must be a name this server answers to: `localhost`, an IP address (a page whose
  origin is an IP address is the server's own origin, never a rebinding), the bind address,
  or a name in `PLANLEDGER_ALLOWED_HOSTS` (`*` there turns the check off, for a proxy that
  checks names itself). A rebinding page's requests carry its own name, and are refused.
- `Origin`, when a browser sends one, must be the server's own: the same host and port as
  `Host`, or a name in `PLANLEDGER_ALLOWED_HOSTS` (the public name behind a proxy). A
  cross-site request carries the other site's origin; a page of another program on this
  machine (`http://localhost:3000`) is another origin too.

A client that is not a browser (curl, the SDKs, the command line) sends no `Origin` and
the host it dialled, and passes. Refusals are 403 with `reason: "forbidden_host"` or
`"forbidden_origin"`, before any route runs.
"""

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from planledger.api.http.asgi import ASGIApp, Receive, Scope, Send, header, send_refusal

LOCAL_NAMES = ("localhost",)
ANY_HOST = "*"


def _hostname(authority: str) -> str | None:
    """The host name of a `Host` value (`name`, `name:port`, `[v6]:port`), lower-cased;
    None when it is not one."""
    try:
        parts = urlsplit(f"//{authority}")
        parts.port  # noqa: B018 - a port that is no number is refused here
    except ValueError:
        return None
    if parts.username is not None or parts.password is not None or parts.path:
        return None
    return parts.hostname or None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class OriginGuard:
    """ASGI middleware: 403 for a foreign `Host` or a cross-origin `Origin`."""

    def __init__(self, app: ASGIApp, bind_host: str, allowed: Iterable[str] = ()) -> None:
        self.app = app
        names = {n.strip().lower().strip("[]") for n in allowed if n.strip()}
        self.any_host = ANY_HOST in names
        self.extra = frozenset(names - {ANY_HOST})  # names a proxy in front may serve
        self.names = frozenset({*LOCAL_NAMES, bind_host.lower().strip("[]"), *self.extra})

    def answers_to(self, name: str) -> bool:
        return self.any_host or name in self.names or _is_ip(name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(header(scope, b"host"), header(scope, b"origin"))
        if refusal is not None:
            await send_refusal(send, 403, *refusal, close=True)
            return
        await self.app(scope, receive, send)

    def refusal(self, host: str | None, origin: str | None) -> tuple[str, str] | None:
        """Why a request with these headers is refused, as (reason, message); None: let
        it in."""
        name = _hostname(host) if host else None
        if host is None or name is None or not self.answers_to(name):
            return ("forbidden_host", f"this server does not answer to the host {host!r}: "
                    "add its name to PLANLEDGER_ALLOWED_HOSTS if it is this server's")
        if origin is None:
            return None
        parts = urlsplit(origin)
        if parts.scheme in ("http", "https") and (
                parts.netloc.lower() == host.lower()
                or (parts.hostname is not None and parts.hostname in self.extra)):
            return None
        return ("forbidden_origin", f"requests from the web page at {origin!r} are refused: "
                "only this server's own pages may call it from a browser")
