"""Agents for the history checker: each runs in its own OS process and drives the real HTTP
API (claim, heartbeat, complete, release, session end), recording every call's start, end
and answer as a `history.Call`.

An agent's behaviour is random but seeded: it claims steps of a small plan with short
leases (so leases lapse under it), heartbeats, completes or releases what it holds, now
and then sits on a claim past its lease, ends its session and starts another, and sends
some calls with a timeout too short to see the answer (their outcome is unknown).
"""

import random
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import httpx

from tests.reliability.history import Call
from tests.support.processes import processes

TIMEOUT = 10.0
IMPATIENT = 0.003  # a timeout that usually fires before the answer: an unknown outcome


@dataclass(frozen=True)
class Plan:
    """What an agent works on, and how it behaves."""

    url: str
    steps: tuple[str, ...]
    seconds: float
    seed: int
    leases: tuple[int, ...] = (1, 2)
    impatience: float = 0.03  # share of calls sent with the impatient timeout


class Agent:
    def __init__(self, plan: Plan, http: httpx.Client) -> None:
        self.plan, self.http = plan, http
        self.rng = random.Random(plan.seed)
        self.calls: list[Call] = []
        self.session, self.held = self._start(), dict[str, int]()

    def _start(self) -> str:
        started = self.http.post("/api/sessions", json={"name": f"agent {self.plan.seed}"})
        started.raise_for_status()
        self.http.headers["Authorization"] = f"Bearer {started.json()['token']}"
        return str(started.json()["session_id"])

    def send(self, op: str, step: str | None, path: str, body: dict[str, Any]) -> Call:
        """One call, timed and recorded; a lost answer is recorded as unknown."""
        patient = self.rng.random() >= self.plan.impatience
        lease = float(body.get("lease_seconds", 0))
        start = time.time()
        try:
            answer = self.http.post(path, json=body, timeout=TIMEOUT if patient else IMPATIENT)
        except httpx.TransportError:
            call = Call(self.session, op, step, start, time.time(), "unknown", lease=lease)
        else:
            call = _call(self.session, op, step, start, time.time(), answer, body, lease)
        self.calls.append(call)
        return call

    def claim(self, step: str) -> None:
        lease = self.rng.choice(self.plan.leases)
        call = self.send("claim", step, f"/api/steps/{step}/claim", {"lease_seconds": lease})
        if call.outcome == "ok" and call.fence is not None:
            self.held[step] = call.fence

    def act(self) -> None:
        roll = self.rng.random()
        if not self.held or roll < 0.35:
            self.claim(self.rng.choice(self.plan.steps))
            return
        step, fence = self.rng.choice(sorted(self.held.items()))
        if roll < 0.65:
            lease = self.rng.choice(self.plan.leases)
            self.send("heartbeat", step, f"/api/steps/{step}/heartbeat", {"lease_seconds": lease})
        elif roll < 0.92:
            op = "complete" if roll < 0.75 else "release"
            self.send(op, step, f"/api/steps/{step}/{op}", {"fence": fence})
            del self.held[step]
        elif roll < 0.96:
            time.sleep(max(self.plan.leases) + 0.1)  # the agent dawdles: its leases lapse
        else:
            self.send("end", None, f"/api/sessions/{self.session}/end", {})
            self.session, self.held = self._start(), {}

    def run(self) -> list[Call]:
        deadline = time.monotonic() + self.plan.seconds
        while time.monotonic() < deadline:
            self.act()
        return self.calls


def _call(session: str, op: str, step: str | None, start: float, end: float,
          answer: httpx.Response, body: dict[str, Any], lease: float) -> Call:
    if answer.status_code >= 500:
        return Call(session, op, step, start, end, "unknown", reason=str(answer.status_code),
                    lease=lease)
    data = answer.json()
    if answer.status_code == 200 and op in ("claim", "heartbeat"):
        expires = datetime.fromisoformat(data["expires_at"]).timestamp()
        return Call(session, op, step, start, end, "ok", fence=data["fence"], expires=expires,
                    renewed=data["renewed"], lease=lease)
    if answer.status_code == 200:
        return Call(session, op, step, start, end, "ok", fence=body.get("fence"))
    return Call(session, op, step, start, end, "refused", reason=data.get("reason"),
                holder=data.get("holder"), lease=lease,
                fence=data.get("fence") if data.get("reason") == "already_claimed"
                else body.get("fence"))


def run_agent(plan: Plan) -> list[dict[str, Any]]:
    """The entry point of an agent process: its calls, as plain dicts."""
    with httpx.Client(base_url=plan.url, timeout=TIMEOUT) as http:
        return [asdict(c) for c in Agent(plan, http).run()]


def run_agents(urls: list[str], steps: list[str], agents: int, seconds: float, seed: int = 0,
               ) -> list[Call]:
    """`agents` processes at once, spread over the servers at `urls`; every call they
    made."""
    plans = [Plan(urls[i % len(urls)], tuple(steps), seconds, seed * 1000 + i)
             for i in range(agents)]
    with processes().Pool(agents) as pool:
        results = pool.map(run_agent, plans)
    return [Call(**c) for calls in results for c in calls]
