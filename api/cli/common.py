"""What every command shares: the options, the client they open, output and exit codes.

Exit codes: 0 done; 1 error (bad input, unknown id, no server, ...); 3 refused by the
ledger (a claim bounced off a holder, a blocked or closed step, a stale fence, not the
holder); 4 nothing ready (claim-next found no step to claim).
"""

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import typer

from planledger.api.cli import EXIT_BOUNCED, EXIT_ERROR, EXIT_NOTHING_READY, output
from planledger.api.cli.direct import word_error
from planledger.api.cli.options import (
    DbOption,
    FenceOption,
    JsonOption,
    LeaseOption,
    SessionOption,
    TokenOption,
    UrlOption,
)
from planledger.api.client import Client, connect
from planledger.ledger.domain.errors import InvalidInput

# The commands' options (api.cli.options) are theirs from here too.
__all__ = [
    "EXIT_BOUNCED",
    "EXIT_ERROR",
    "EXIT_NOTHING_READY",
    "DbOption",
    "FenceOption",
    "JsonOption",
    "LeaseOption",
    "SessionOption",
    "TokenOption",
    "UrlOption",
    "answering_errors",
    "emit",
    "open_client",
    "require",
]


T = TypeVar("T")

@contextmanager
def open_client(db: str | None, url: str | None, session: str | None = None,
                token: str | None = None) -> Iterator[Client]:
    """A client on the server at `url`, else on the embedded store `db`; errors inside the
    block become a message on stderr and the exit code for their kind."""
    with answering_errors():
        client = connect(url, db=db, token=token, session=session)
        try:
            yield client
        finally:
            client.close()


@contextmanager
def answering_errors() -> Iterator[None]:
    try:
        yield
    except typer.Exit:
        raise
    except Exception as error:  # worded by api.cli.direct, which answers without typer too
        code = word_error(error)
        if code is None:
            raise
        raise typer.Exit(code) from None


def emit(result: Any, as_json: bool, show: Callable[[Any], None]) -> None:
    """Print JSON for scripts, or call `show` (api.cli.render) with the answer's fields for
    people."""
    mode = "json" if as_json else "python"
    data = ([r.model_dump(mode=mode) for r in result] if isinstance(result, list)
            else result.model_dump(mode=mode))
    if as_json:
        output.echo(json.dumps(data, indent=2))
    else:
        show(data)


def require(value: T | None, what: str) -> T:
    if value is None:
        raise InvalidInput(what, "is required")
    return value
