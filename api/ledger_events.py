"""The whole log as the ledger's own events, read through a client (the embedded store's,
or a server's `GET /api/log` pages), for the reads that fold all of it by themselves
(`planledger audit git`). A page carries each event's fields as JSON; they are checked against the
event's own dataclass (pydantic), and an event of a type this version does not know is
passed by."""

from collections.abc import Iterator
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError

from planledger.api.client import Client
from planledger.api.schemas import EventOut
from planledger.ledger.domain import events as ev

PAGE = 1_000  # events per page asked of a server (its cap)


class UnreadableEvent(ValueError):
    """An event a server sent that is not the event its type says; names its position."""


def events_of(client: Client) -> Iterator[tuple[int, object]]:
    """Every event of the log a client reads (GET /api/log, page by page), in order."""
    after = 0
    while True:
        page = client.log(after=after, limit=PAGE)
        for out in page.events:
            event = typed(out)
            if event is not None and out.position is not None:
                yield out.position, event
        if not page.more or page.next_after <= after:
            return
        after = page.next_after


@cache
def _types() -> dict[str, type[ev.LedgerEvent]]:
    return {cls.__name__: cls for cls in vars(ev).values()
            if isinstance(cls, type) and issubclass(cls, ev.LedgerEvent)
            and cls is not ev.LedgerEvent}


@cache
def _adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(_types()[name])


def typed(out: EventOut) -> ev.LedgerEvent | None:
    """The event a page entry shows, as its dataclass; None for a type not known here."""
    cls = _types().get(out.type)
    if cls is None:
        return None
    fields = {**out.data, "originator_id": out.stream, "originator_version": out.version,
              "timestamp": out.at, "session_id": out.session_id, "actor": out.actor}
    try:
        event: ev.LedgerEvent = _adapter(out.type).validate_python(fields)
    except ValidationError as error:
        raise UnreadableEvent(f"the event at position {out.position} is not a "
                              f"{out.type}: {error.errors()[0]['msg']}") from None
    return event
