"""`planledger audit verify`: check the hash chain of a store or a recording (ledger.chain)
and name the first event that was changed, removed or reordered; on a store, also that
SQLite's positions have no gap and that the log adds up to its signed head
(ledger.log_head), so its newest events cut off, or a stream deleted, show too.

Exit codes: 0 every link holds; 1 a broken link, or a file or store that cannot be read.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from planledger.api.commands.common import DbOption, JsonOption, answering_errors
from planledger.api.derived_keys import derived_key
from planledger.api.runtime import Runtime, open_runtime
from planledger.ledger.chain import Broken, Entry, Verified, verify
from planledger.ledger.log_head import HEAD_PURPOSE, Finding, KeepsHead, judge
from planledger.ledger.storage import MEMORY, is_postgres, resolve_db
from planledger.ledger.store import EventStore
from planledger.replays.format import RecordingError, canonical
from planledger.replays.jsonline import BadLine, parse_line
from planledger.replays.reading import read_file

audit_app = typer.Typer(help="Tamper evidence: check the log's hash chain.",
                        no_args_is_help=True)
EXIT_BROKEN = 1
PAGE = 1000


class Unreadable(Exception):
    """A recording line that is not an event anyone could have written."""


def store_entries(store: EventStore) -> Iterator[Entry]:
    """Every event of the store's log, in order, as stored."""
    position = 0
    while True:
        notes = store.recorder.select_notifications(start=position, limit=PAGE,
                                                    inclusive_of_start=False)
        for n in notes:
            yield Entry(n.id, str(n.originator_id), n.originator_version, n.topic, n.state)
        if len(notes) < PAGE:
            return
        position = notes[-1].id


def recording_entries(path: Path) -> Iterator[Entry]:
    """Every event line of a recording, in file order. Read leniently (unlike an import):
    a line that is gone or moved must reach the chain check, which names the event."""
    try:
        with path.open(encoding="utf-8") as lines:
            for number, text in enumerate(lines, 1):
                if text.strip():
                    entry = _entry(number, text)
                    if entry is not None:
                        yield entry
    except OSError as error:
        raise Unreadable(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise Unreadable(f"{path} is not UTF-8 text: the file was changed") from None


def _entry(number: int, text: str) -> Entry | None:
    try:
        line = parse_line(text)
    except BadLine as error:
        raise Unreadable(f"line {number} is {error}: the file was changed") from None
    if not isinstance(line, dict) or line.get("type") != "event":
        return None
    fields = (line.get("position"), line.get("stream"), line.get("version"),
              line.get("topic"), line.get("state"))
    kinds = (int, str, int, str, dict)
    if not all(isinstance(v, k) and not isinstance(v, bool) for v, k in zip(fields, kinds,
                                                                              strict=True)):
        raise Unreadable(f"line {number} is not a whole event line: the file was changed")
    position, stream, version, topic, state = fields
    return Entry(position, stream, version, topic, canonical(state))  # type: ignore[arg-type]


def _report(result: Verified | Broken, what: str, as_json: bool,
            head: Finding | None = None) -> None:
    intact = isinstance(result, Verified) and (head is None or head.intact)
    if as_json:
        found = {"head": vars(head)} if head is not None else {}
        typer.echo(json.dumps({"intact": intact, "source": what, **vars(result), **found},
                              indent=2, default=str))
    elif isinstance(result, Broken):
        typer.echo(f"TAMPERED: {what}: {result.message}", err=True)
    elif head is not None and not head.intact:
        typer.echo(f"TAMPERED: {what}: {head.message}", err=True)
    else:
        signed = f"\n{head.message}" if head is not None else ""
        typer.echo(f"intact: {result.events} events in {result.streams} streams of {what}, "
                   f"every hash chained to the one before{signed}\n"
                   f"heads digest: {result.digest}")
    if not intact:
        raise typer.Exit(EXIT_BROKEN)


def _require_store(db: str) -> None:
    """Verifying a store that is not there must not create an empty one and call it intact."""
    if db != MEMORY and not is_postgres(db) and not Path(db).expanduser().is_file():
        raise ValueError(f"no store at {db}")


TRIES = 5  # a store appended to while it is verified: read its head and log again


def verify_store(runtime: Runtime) -> tuple[Verified | Broken, Finding | None]:
    """The store's chains, and what its signed head says of its log. SQLite moves its head
    in each append's transaction, so a head and a log read apart are read again until they
    agree (a store busy past `TRIES` reads is judged on the last)."""
    recorder = runtime.store.recorder
    postgres = is_postgres(runtime.db)
    if not isinstance(recorder, KeepsHead):  # an in-memory store keeps no head
        return verify(store_entries(runtime.store)), None
    key = derived_key(runtime.secret, HEAD_PURPOSE)
    for _ in range(TRIES):
        head = recorder.read_head()
        marks = (head.position,) if head is not None else ()
        result = verify(store_entries(runtime.store), contiguous=not postgres, marks=marks)
        if isinstance(result, Broken):
            return result, None
        verified = result
        if postgres or head is None or result.last == head.position:
            break
        again = recorder.read_head()
        if again is None or again.position <= head.position:
            break  # the head did not move: the newer events were written around it
    return verified, judge(verified, head, key, lag_allowed=postgres)


@audit_app.command("verify")
def verify_command(
    recording: Annotated[Path | None, typer.Argument(
        help="A recording (JSON Lines) to check; without it, the store (--db).",
        show_default=False)] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check that every event carries a hash chained to the event before it in its stream;
    name the first event changed, removed or reordered. On a store, check too that the log
    adds up to the head the store signed with its secret (so its newest events cut off, or
    a stream deleted, show) and, on SQLite, that no position is missing. Prints a digest of
    every stream's head: note it, and a later run that prints another shows any change
    since."""
    if recording is not None:
        try:
            result = verify(recording_entries(recording))
            if isinstance(result, Verified):
                # The chains hold: the file must also be whole as an import reads it
                # (a header, its counts met), or a cut or a stranger file passes as intact.
                read_file(recording)
        except (Unreadable, RecordingError) as error:
            typer.echo(f"TAMPERED or unreadable: {error}", err=True)
            raise typer.Exit(EXIT_BROKEN) from None
        _report(result, str(recording), as_json)
        return
    with answering_errors():
        _require_store(resolve_db(db))
        runtime = open_runtime(db)
        try:
            result, head = verify_store(runtime)
        finally:
            runtime.close()
    _report(result, f"store {runtime.db}", as_json, head)
