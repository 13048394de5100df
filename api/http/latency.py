"""Request latency and requests in flight into the metrics, as a plain ASGI middleware.

Starlette's `@app.middleware("http")` wraps every response in a streaming task (about a
tenth of a claim's server time in a profile); this one only watches the status go by.
"""

import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from planledger.api.metrics import Metrics

# A client may send any token as its method; as a label each would become a series of its
# own, so a flood of invented methods would grow /metrics without bound.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def method_label(method: str) -> str:
    """The method as a metrics label: one of the standard ones, or `other`."""
    return method if method in KNOWN_METHODS else "other"


class LatencyObserver:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client sees if the app dies before answering

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        self.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, watch)
        finally:
            self.metrics.in_flight.dec()
            route: Any = scope.get("route")  # the router sets it on this same scope
            # A route's template as people read it: `{step_id:path}` (a step matched as a
            # path, api.http.routes_steps) is labelled `{step_id}`, as before.
            path = getattr(route, "path", "unmatched").replace(":path}", "}")
            self.metrics.latency.labels(method_label(scope["method"]), path,
                                        str(status)).observe(time.perf_counter() - started)
