"""Path reservations: a claim reserves its step's paths with its own lease and fence.

A step declares the paths it will touch (`PathsDeclared`, on its plan); a claim may add
more. When a claim lands, its paths are reserved by a `PathsReserved` in the same append,
on the store's one reservations stream. The reservation is the claim's: it lives exactly
while the claim does (same step, same fence, live lease, holder's session not ended), so a
heartbeat renews both and a lapse, a completion, a release, a drop or a session's end frees
both, with no event of its own. Every reserving claim appends to that one stream, so two
claims that would reserve overlapping paths at once cannot both land: the second conflicts
and decides again, seeing the first. A claim whose paths conflict with another session's
live reservation (`paths.conflict`) bounces (`PathsBounced`, refusal `PathsHeld`).

The stream's state keeps each step's latest reservation; a claim that finds some no longer
live says so (`freed`), and they are forgotten, so the state stays the size of what is held.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from planledger.ledger.domain import errors
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.claims import Decision, live_holder
from planledger.ledger.domain.ids import Actor, SessionId, StepId, acting_session
from planledger.ledger.domain.paths import (
    Budget,
    PathSpec,
    check_paths,
    conflict,
    merge,
    restated,
)
from planledger.ledger.domain.state import PlanState, SessionState, StepState

RESERVATIONS_STREAM = "reservations"


def records(paths: Iterable[PathSpec]) -> list[dict[str, str]]:
    """Paths as events carry them."""
    return [p.as_record() for p in paths]


def specs(carried: Iterable[dict[str, str]]) -> tuple[PathSpec, ...]:
    """Paths as events carry them, back as values."""
    return tuple(PathSpec.of_record(r) for r in carried)


@dataclass(frozen=True)
class Reservation:
    """The paths a claim (step, holder, fence) reserved."""

    step_id: StepId
    session: SessionId
    fence: int
    paths: tuple[PathSpec, ...]

    def live(self, step: StepState, now: datetime, holder_ended: bool) -> bool:
        """Whether the claim it belongs to still holds `step` at `now`."""
        return (step.id == self.step_id and step.fence == self.fence
                and live_holder(step, now, holder_ended) == self.session)


@dataclass(frozen=True)
class Reservations:
    """The reservations stream folded: each step's latest reservation not yet freed."""

    id: str
    version: int
    held: dict[StepId, Reservation] = field(default_factory=dict)


def note_reserved(held: dict[StepId, Reservation], event: ev.PathsReserved) -> None:
    """Fold one reservation into a table of them (the read side keeps one too)."""
    for freed in event.freed:
        held.pop(StepId(freed), None)
    step_id = StepId(event.step_id)
    held[step_id] = Reservation(step_id, SessionId(event.session_id or ""), event.fence,
                                specs(event.paths))


def fold_reservations(
    state: Reservations | None, events: Iterable[ev.LedgerEvent]
) -> Reservations | None:
    """Fold the reservations stream (a copy of the table: states are shared)."""
    if state is not None and not isinstance(state, Reservations):
        return None
    held = dict(state.held) if state is not None else {}
    version = state.version if state is not None else 0
    for event in events:
        if not isinstance(event, ev.PathsReserved):
            return None
        note_reserved(held, event)
        version = event.originator_version
    return Reservations(RESERVATIONS_STREAM, version, held)


NO_RESERVATIONS = Reservations(RESERVATIONS_STREAM, 0)


# --- declaring -----------------------------------------------------------------------------


def decide_declare_paths(
    plan: PlanState, step_id: StepId, paths: Sequence[PathSpec], version: int, actor: Actor,
    now: datetime,
) -> ev.PathsDeclared:
    """The step's paths, checked, as the plan will declare them (at plan `version`)."""
    if step_id not in plan.steps:
        raise errors.UnknownStep(step_id)
    return ev.PathsDeclared(plan.id, version, timestamp=now, session_id=acting_session(actor),
                            actor=actor, step_id=step_id, paths=records(check_paths(paths)))


def with_declared_paths(
    plan: PlanState, revised: ev.StepRevised, paths: Sequence[PathSpec] | None,
    actor: Actor, now: datetime,
) -> list[ev.LedgerEvent]:
    """A revision's events: the words revised (unless only the paths are), then the paths
    declared anew (when given)."""
    if paths is None:
        return [revised]
    if revised.title is None and revised.body is None:
        return [decide_declare_paths(plan, StepId(revised.step_id), paths,
                                     revised.originator_version, actor, now)]
    return [revised, decide_declare_paths(plan, StepId(revised.step_id), paths,
                                          revised.originator_version + 1, actor, now)]


# --- claiming ------------------------------------------------------------------------------


def conflicts(
    wanted: Sequence[PathSpec], others: Iterable[Reservation]
) -> list[tuple[Reservation, tuple[str, ...]]]:
    """Each reservation the paths conflict with, and its patterns that do; OverBudget
    when deciding it all would take more than one request's budget (ledger.domain.paths)."""
    found = []
    budget = Budget()
    for other in others:
        theirs = tuple(t.pattern for t in other.paths
                       if any(conflict(mine, t, budget) for mine in wanted))
        if theirs:
            found.append((other, theirs))
    return found


def _unnamed(_: Reservation) -> tuple[str, str | None, str | None]:
    return "", None, None


@dataclass(frozen=True)
class Reserving:
    """What a claim's reservation is decided on: the reservations stream's `version`, the
    other sessions' live reservations (`others`), the steps whose reservations are no longer
    live (`freed`), the step's own live reservation (`current`: a heartbeat's), and, for a
    refusal, each reservation's step title, holder's name and step reference, `plan#N`
    (`describe`)."""

    version: int
    others: Sequence[Reservation]
    freed: Sequence[StepId]
    current: Reservation | None = None
    describe: Callable[[Reservation], tuple[str, str | None, str | None]] = _unnamed


def decide_reservation(
    granted: Decision, step: StepState, declared: Sequence[PathSpec],
    extra: Sequence[PathSpec], session: SessionState, lease_seconds: int, seen: Reserving,
    now: datetime,
) -> Decision:
    """A granted claim with its paths reserved, or bounced off another holder's. A new claim
    reserves the step's `declared` paths and its `extra` ones (a pattern exclusive in either
    is exclusive); the holder's heartbeat restates what it holds with `extra`: new patterns
    are added, and one given again takes the mode given, so an exclusive one given as shared
    is shared from then on (nothing new: a plain heartbeat, the reservations untouched)."""
    grant = granted.events[0]
    assert isinstance(grant, ev.StepClaimed | ev.LeaseRenewed)
    renewing = isinstance(grant, ev.LeaseRenewed)
    held = seen.current.paths if renewing and seen.current is not None else ()
    given = check_paths(extra)
    wanted = restated(held, given) if renewing else merge(declared, given)
    if not wanted or (renewing and wanted == held):
        return granted
    clashes = conflicts(wanted, seen.others)
    if clashes:
        return _bounce(step, session, wanted, clashes, seen, lease_seconds, now)
    reserved = ev.PathsReserved(
        RESERVATIONS_STREAM, seen.version + 1, timestamp=now, session_id=session.id,
        actor=session.id, step_id=step.id, fence=grant.fence,
        paths=records(wanted), freed=sorted(seen.freed))
    return replace(granted, events=[*granted.events, reserved])


def _bounce(step: StepState, session: SessionState, wanted: Sequence[PathSpec],
            clashes: Sequence[tuple[Reservation, tuple[str, ...]]], seen: Reserving,
            lease_seconds: int, now: datetime) -> Decision:
    bounced = ev.PathsBounced(
        session.id, session.version + 1, timestamp=now, session_id=session.id,
        actor=session.id, step_id=step.id, paths=records(wanted),
        conflicts=[{"holder": r.session, "step_id": r.step_id, "fence": r.fence,
                    "patterns": list(theirs)} for r, theirs in clashes],
        lease_seconds=lease_seconds)
    named = [(r, seen.describe(r), theirs) for r, theirs in clashes]
    refusal = errors.PathsHeld(step.id, [(r.session, name, r.step_id, title, theirs)
                                         for r, (title, name, _), theirs in named],
                               refs={r.step_id: ref for r, (_, _, ref), _ in named if ref})
    return Decision([bounced], refusal)
