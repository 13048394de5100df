"""Check a store for tampering, for `planledger audit verify`.

The command itself lives in replays.audit_cli, because it checks recordings too. This
module checks the hash chain of the store's log (ledger.chain) and names the first event
that was changed, removed or reordered. It also checks that SQLite's log positions have
no gap, and that the log matches its signed head (ledger.log_head). So cut-off newest
events, or a deleted stream, show up too.

Exit codes: 0 every link holds; 1 a broken link, or a file or store that cannot be read;
2 the chains hold but the signed head cannot be checked (no secret for the store). A verify
never writes a file. Without the store's secret it says so; it never makes a new one.
"""

import json
from collections.abc import Iterator
from pathlib import Path
from types import EllipsisType

from planledger.api.cli import output
from planledger.api.cli.common import answering_errors
from planledger.api.derived_keys import derived_key
from planledger.api.runtime import Runtime, open_runtime
from planledger.infra.secret import find_secret, secret_path
from planledger.ledger.chain import Broken, Entry, Verified, verify
from planledger.ledger.log_head import HEAD_PURPOSE, NO_SECRET, Finding, judge
from planledger.ledger.notification_log import (
    PAGE,
    head_began,
    keeps_head,
    page_after,
    read_head,
)
from planledger.ledger.storage import MEMORY, is_postgres, resolve_db
from planledger.ledger.store import EventStore

EXIT_BROKEN = 1
EXIT_UNCHECKED = 2


def store_entries(store: EventStore) -> Iterator[Entry]:
    """Every event of the store's log, in order, as stored."""
    position = 0
    while True:
        notes = page_after(store, position, limit=PAGE)
        for n in notes:
            yield Entry(n.id, str(n.originator_id), n.originator_version, n.topic, n.state)
        if len(notes) < PAGE:
            return
        position = notes[-1].id


def report(result: Verified | Broken, what: str, as_json: bool,
           head: Finding | None = None) -> None:
    """Print what was verified (`--json`: as one object); exit 1 unless it is intact."""
    intact = isinstance(result, Verified) and (head is None or head.intact)
    unchecked = isinstance(result, Verified) and head is not None and not head.checked
    if as_json:
        found = {"head": vars(head)} if head is not None else {}
        output.echo(json.dumps({"intact": intact, "source": what, **vars(result), **found},
                               indent=2, default=str))
    elif isinstance(result, Broken):
        output.line(f"TAMPERED: {what}: {result.message}", stderr=True)
    elif unchecked:
        assert head is not None
        output.line(f"UNCHECKED: {what}: {result.events} events in {result.streams} streams, "
                    f"every hash chained to the one before; {head.message}", stderr=True)
    elif head is not None and not head.intact:
        output.line(f"TAMPERED: {what}: {head.message}", stderr=True)
    else:
        signed = f"\n{head.message}" if head is not None else ""
        output.text(f"intact: {result.events} events in {result.streams} streams of {what}, "
                    f"every hash chained to the one before{signed}\n"
                    f"heads digest: {result.digest}")
    if not intact:
        raise SystemExit(EXIT_UNCHECKED if unchecked else EXIT_BROKEN)


def _require_store(db: str) -> None:
    """Verifying a store that is not there must not create an empty one and call it intact."""
    if db != MEMORY and not is_postgres(db) and not Path(db).expanduser().is_file():
        raise ValueError(f"no store at {db}")


TRIES = 5  # a store appended to while it is verified: read its head and log again


def verify_store(runtime: Runtime, secret: bytes | EllipsisType | None = ...,
                 ) -> tuple[Verified | Broken, Finding | None]:
    """Check the store's chains, and check its log against its signed head.

    `secret` signs the head. `...` means the runtime's own secret; None means no secret
    is known, so the head is not checked. SQLite moves the head inside each append's
    transaction. So if the head and the log were read at different moments, both are read
    again until they agree. A store still busy after `TRIES` reads is judged on the last."""
    store = runtime.store
    postgres = is_postgres(runtime.db)
    if not keeps_head(store):  # an in-memory store keeps no head
        return verify(store_entries(runtime.store)), None
    secret = runtime.secret if secret is ... else secret
    if secret is None:
        result = verify(store_entries(runtime.store), contiguous=not postgres)
        where = "its secret file" if postgres else str(secret_path(runtime.db))
        return result, Finding(False, NO_SECRET.format(path=where), checked=False)
    key = derived_key(secret, HEAD_PURPOSE)
    began = head_began(store)
    for _ in range(TRIES):
        head = read_head(store)
        marks = (head.position,) if head is not None else ()
        result = verify(store_entries(runtime.store), contiguous=not postgres, marks=marks)
        if isinstance(result, Broken):
            return result, None
        verified = result
        if postgres or head is None or result.last == head.position:
            break
        again = read_head(store)
        if again is None or again.position <= head.position:
            break  # the head did not move: the newer events were written around it
    return verified, judge(verified, head, key, lag_allowed=postgres, began=began)


def check_store(db: str | None, as_json: bool) -> None:
    """Verify the store named by `db` and report it (exit 1 unless intact)."""
    with answering_errors():
        resolved = resolve_db(db)
        _require_store(resolved)
        secret = find_secret(resolved)  # never made up here: see verify_store
        runtime = open_runtime(resolved, secret=secret)
        try:
            result, head = verify_store(runtime, secret)
        finally:
            runtime.close()
    report(result, f"store {runtime.db}", as_json, head)
