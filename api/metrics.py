"""Prometheus metrics of one server process: claims, refusals, lapses, releases, latency.

Each app gets its own registry, so several apps in one process (tests) never collide.
"""

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from planledger.api.errors import BOUNCE_REASONS, status_and_reason
from planledger.ledger import commands as c
from planledger.ledger.domain.errors import LedgerError

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Children:
    """A counter's labelled children, kept per label value once first asked for:
    prometheus_client's `labels` checks the names and takes a lock on every call, and a
    busy server counts on every claim and refusal. Its children are never removed here,
    so the one kept is the one the registry exports."""

    def __init__(self, parent: Counter) -> None:
        self._parent = parent
        self._children: dict[str, Counter] = {}

    def __call__(self, value: str) -> Counter:
        child = self._children.get(value)
        if child is None:  # two threads may both ask: labels gives both the same child
            child = self._children[value] = self._parent.labels(value)
        return child


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.claims = Counter("planledger_claims", "Claims granted (renewed: heartbeats)",
                              ["renewed"], registry=r)
        self.bounces = Counter("planledger_bounces", "Claims and closing calls refused, "
                               "by reason", ["reason"], registry=r)
        self.lapses = Counter("planledger_lapses", "Grants that took over a lapsed claim",
                              registry=r)
        self.releases = Counter("planledger_releases", "Claims released, by reason",
                                ["reason"], registry=r)
        self.completions = Counter("planledger_completions", "Steps completed", registry=r)
        self.drops = Counter("planledger_drops", "Steps dropped", registry=r)
        self.latency = Histogram("planledger_request_seconds", "HTTP request latency",
                                 ["method", "route", "status"], registry=r)
        self.in_flight = Gauge("planledger_requests_in_flight", "HTTP requests begun and not "
                               "yet answered", registry=r)
        self._claims_by_renewal = Children(self.claims)
        self._bounces_by_reason = Children(self.bounces)
        self._releases_by_reason = Children(self.releases)

    def observe(self, command: c.Command[Any], result: object) -> None:
        """Count what a command did, from its result."""
        if isinstance(result, c.NextClaim):
            result = result.grant
        if isinstance(result, c.Grant):
            self._claims_by_renewal("true" if result.renewed else "false").inc()
            if result.took_over_from:
                self.lapses.inc()
        elif isinstance(result, c.SessionEnded):
            self.released("session_ended", len(result.released))
        elif isinstance(result, c.ForceReleased):
            self.released("forced", int(result.released))
        elif isinstance(command, c.Complete):
            self.completions.inc()
        elif isinstance(command, c.Release):
            self.released(command.reason)
        elif isinstance(command, c.Drop):
            self.drops.inc()

    def refused(self, error: LedgerError) -> None:
        reason = status_and_reason(error)[1]  # a refusal's counter needs no body
        if reason in BOUNCE_REASONS:
            self._bounces_by_reason(reason).inc()

    def released(self, reason: str, count: int = 1) -> None:
        if count:
            self._releases_by_reason(reason).inc(count)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
