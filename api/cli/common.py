"""Helpers for the verbs outside api.cli.calls: opening a client, errors and output.

Errors are worded the same way as everywhere else in the command line.

Exit codes: 0 done; 1 error (bad input, unknown id, no server, ...); 3 refused by the
ledger (a claim bounced off a holder, a blocked or closed step, a stale fence, not the
holder); 4 nothing ready (claim-next found no step to claim).
"""

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from planledger.api.cli import output
from planledger.api.cli.calls import word_error
from planledger.api.client import Client, connect
from planledger.ledger.storage import MEMORY, is_postgres, resolve_db


@contextmanager
def open_client(db: str | None, url: str | None, session: str | None = None,
                token: str | None = None) -> Iterator[Client]:
    """Open a client on the server at `url`, or else on the embedded store `db`.

    An error inside the block becomes a message on stderr and the exit code for its kind."""
    with answering_errors():
        client = connect(url, db=db, token=token, session=session)
        try:
            yield client
        finally:
            client.close()


def require_store(db: str | None, url: str | None) -> None:
    """Exit 1 naming the store if `db` names a SQLite file that does not exist: a read
    never creates a store (opening one would). A server (`url`), memory and PostgreSQL
    pass."""
    if not url:
        chosen = resolve_db(db)
        if chosen != MEMORY and not is_postgres(chosen) and not Path(chosen).is_file():
            output.line(f"no store at {chosen}", stderr=True)
            raise SystemExit(1)


@contextmanager
def answering_errors() -> Iterator[None]:
    """Turn an error inside the block into a message on stderr and an exit code.

    The wording comes from api.cli.calls.word_error. An error with no wording is a bug,
    so it is raised."""
    try:
        yield
    except SystemExit:
        raise
    except Exception as error:
        code = word_error(error)
        if code is None:
            raise
        raise SystemExit(code) from None


def emit(result: Any, as_json: bool, show: Callable[[Any], None]) -> None:
    """Print JSON for scripts, or pass the answer's fields to `show` for people.

    `show` is a renderer from api.cli.render."""
    mode = "json" if as_json else "python"
    data = ([r.model_dump(mode=mode) for r in result] if isinstance(result, list)
            else result.model_dump(mode=mode))
    if as_json:
        output.echo(json.dumps(data, indent=2))
    else:
        show(data)
