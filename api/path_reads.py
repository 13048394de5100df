"""Path reservations in the read answers: a holder's card, and who holds what some paths
or files meet (`check`: the `paths_check` tool, `GET /api/reservations`, `planledger paths
check` and the commit guard). What a step's live claim holds reserved and what a claimable
step would collide with are in api.plain_answers."""

from collections.abc import Sequence

from planledger.api.runtime import Runtime
from planledger.api.schemas import (
    HeldOut,
    PathsCheckOut,
    ReservationOut,
    paths_out,
)
from planledger.ledger.domain.errors import InvalidInput
from planledger.ledger.domain.ids import SessionId
from planledger.ledger.domain.paths import MAX_PATHS, check_file, check_pattern
from planledger.projections import reservations
from planledger.projections.reservations import HeldPaths, Meeting

MAX_FILES = 10_000  # staged files one guard check may ask about


def reservation_out(held: HeldPaths, patterns: Sequence[str] = ()) -> ReservationOut:
    return ReservationOut(step_id=held.step_id, ref=held.ref, plan=held.plan, title=held.title,
                          holder=held.session_id, holder_name=held.session_name,
                          fence=held.fence, expires_at=held.expires_at,
                          paths=paths_out(held.paths), patterns=list(patterns))


def describe(found: Sequence[Meeting]) -> str:
    """Who holds what, for people: one line per reservation met."""
    if not found:
        return "no live reservation meets these paths"
    return "; ".join(
        ", ".join(f'"{p}"' for p in m.patterns) + f' held by "{m.held.session_id}" ('
        + (f"{m.held.session_name}, " if m.held.session_name else "")
        + f'step {m.held.ref or m.held.step_id} "{m.held.title}")' for m in found)


def check(runtime: Runtime, patterns: Sequence[str] = (), files: Sequence[str] = (),
          exclusive_only: bool = False, but: str | None = None) -> PathsCheckOut:
    """The live reservations the patterns overlap or the files fall under (every live one
    when neither is given); `exclusive_only` leaves shared ones out, `but` a session's."""
    if len(patterns) > MAX_PATHS:
        raise InvalidInput("paths", f"{len(patterns)} given; the limit is {MAX_PATHS}")
    if len(files) > MAX_FILES:
        raise InvalidInput("files", f"{len(files)} given; the limit is {MAX_FILES}")
    normal = [check_pattern(p, "paths") for p in patterns]
    named = [check_file(f, "files") for f in files]
    with runtime.reads.reading() as (view, moment):
        live_ones = reservations.live(view, moment)
    if normal or named:  # decided outside the lock: reads wait for no overlap question
        found = reservations.meeting(live_ones, normal, named, exclusive_only,
                                     SessionId(but) if but else None)
    else:
        found = [Meeting(h, tuple(p.pattern for p in h.paths)) for h in live_ones
                 if (h.session_id != but) and (not exclusive_only or
                                               any(p.exclusive for p in h.paths))]
    return PathsCheckOut(reserved=[reservation_out(m.held, m.patterns) for m in found],
                         message=describe(found))



def with_reserved_paths(runtime: Runtime, holds: list[HeldOut]) -> list[HeldOut]:
    """A session's live claims, each with the paths it holds reserved (a holder's card)."""
    if not holds:
        return holds
    with runtime.reads.reading() as (view, moment):
        found: dict[str, HeldPaths] = {h.step_id: h for h in reservations.live(view, moment)}
    return [h.model_copy(update={"paths": paths_out(found[h.step_id].paths)})
            if h.step_id in found else h for h in holds]
