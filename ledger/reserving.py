"""A claim's path reservation, read and decided inside the claim's own attempt.

The claim handler (ledger.claim_handlers) decides the claim as ever, then hands a grant
here: the reservations stream is read in the same transaction (its version is what every
reserving claim appends at, so two cannot both land on one state), each reservation on it
is judged live or not on its step's fresh state, and the domain
(ledger.domain.reservations) adds the `PathsReserved` to the grant or turns it into a
bounce. A claim with no paths to reserve, and a plain heartbeat, read nothing here.
"""

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from planledger.ledger import commands as c
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.claims import Decision
from planledger.ledger.domain.ids import SessionId, StepId
from planledger.ledger.domain.paths import OverBudget, PathSpec, kept_exclusive, wide_patterns
from planledger.ledger.domain.references import step_reference
from planledger.ledger.domain.reservations import (
    Reservation,
    Reserving,
    conflicts,
    decide_reservation,
    specs,
)
from planledger.ledger.domain.state import SessionState, StepDef, StepState
from planledger.ledger.execution import Execution
from planledger.ledger.store import must_not_linger


def reserve(run: Execution, granted: Decision, step: StepState, definition: StepDef,
            session: SessionState, extra: Sequence[PathSpec], lease_seconds: int,
            now: datetime) -> Decision:
    """The claim's decision with its paths reserved (or bounced off another holder's)."""
    if granted.refusal is not None or not granted.events:
        return granted
    renewing = isinstance(granted.events[0], ev.LeaseRenewed)
    if not extra and (renewing or not definition.paths):
        return granted  # nothing new to reserve: the reservations are not read
    seen = reading(run, step, session.id, now)
    if seen.others:  # overlaps to decide: never on an event loop (api.http.running)
        must_not_linger("a claim with paths decides their overlaps on a worker thread")
    return decide_reservation(granted, step, definition.paths, extra, session,
                              lease_seconds, seen, now)


def reading(run: Execution, step: StepState | None, session: SessionId,
            now: datetime) -> Reserving:
    """The reservations as a claim by `session` on `step` meets them at `now`."""
    state = run.store.reservations()
    others: list[Reservation] = []
    freed: list[StepId] = []
    current: Reservation | None = None
    held: dict[StepId, StepState] = {}
    for step_id, reservation in state.held.items():
        held[step_id] = step if step is not None and step_id == step.id else (
            run.store.step(step_id))
        if not reservation.live(held[step_id], now, run.holder_ended(held[step_id])):
            freed.append(step_id)
        elif step is not None and step_id == step.id:
            current = reservation
        elif reservation.session != session:  # a session's own never exclude each other
            others.append(reservation)

    def describe(reservation: Reservation) -> tuple[str, str | None, str | None]:
        """The holder's step title, the holder's name and the step's reference: read only
        for a refusal."""
        of = held[reservation.step_id]
        definition = run.store.plan(of.plan).steps.get(of.id)
        name = run.store.session(reservation.session).name
        if definition is None:
            return "", name, None
        return definition.title, name, step_reference(of.plan, definition.position)

    return Reserving(state.version, others, freed, current, describe)


def collides(run: Execution, step_id: StepId, session: str, now: datetime) -> bool:
    """Whether claiming the step now would bounce off another session's reservation (a
    claim-next passes it by, as it passes a held step)."""
    step = run.store.step(step_id)
    definition = run.store.plan(step.plan).steps.get(step_id)
    if definition is None or not definition.paths:
        return False
    seen = reading(run, step, SessionId(session), now)
    try:
        return bool(conflicts(definition.paths, seen.others))
    except OverBudget:
        return True  # too costly to decide: passed by, as a step that would bounce


def with_kept(run: Execution, grant: c.Grant, step: StepState) -> c.Grant:
    """A renewed grant naming the reservations its claim still holds (a heartbeat reserves
    nothing new, and answered `paths: []` while the claim held them)."""
    kept = run.store.reservations().held.get(step.id)
    if kept is None or kept.session != grant.session_id or kept.fence != grant.fence:
        return grant
    return replace(grant, paths=kept.paths)


def with_warnings(grant: c.Grant | None, declared: Sequence[PathSpec],
                  given: Sequence[PathSpec]) -> c.Grant | None:
    """The grant with what its holder should know of its paths: a pattern that reserves
    the whole repository (or every name at a depth), and on a new claim, a pattern given as
    shared that the step keeps exclusive."""
    if grant is None:
        return None
    said = wide_patterns(grant.paths)
    if not grant.renewed:
        said += kept_exclusive(declared, given)
    return replace(grant, warnings=tuple(said)) if said else grant


def with_reserved(grant: c.Grant | None, decision: Decision) -> c.Grant | None:
    """The grant naming the paths its decision reserved."""
    reserved = [e for e in decision.events if isinstance(e, ev.PathsReserved)]
    if grant is None or not reserved:
        return grant
    return replace(grant, paths=specs(reserved[0].paths))
