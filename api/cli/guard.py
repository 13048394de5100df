"""`planledger guard install` and `planledger guard check`: the commit guard (api.guard)."""

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from planledger.api.cli import output
from planledger.api.cli.grammar import Values

if TYPE_CHECKING:  # loaded when a command runs, not when the command line starts
    from planledger.api.guard import Ask
    from planledger.api.schemas import PathsCheckOut

EXIT_REFUSED = 1  # what git needs to abort the commit


def install(v: Values) -> None:
    from planledger.api.guard import GuardError
    from planledger.api.guard import install as write_hook
    from planledger.ledger.storage import MEMORY, is_postgres, resolve_db

    url, fail_closed = v["url"], v["fail_closed"]
    where = url and ["--url", url]
    if not where:
        chosen = resolve_db(v["db"])
        local = chosen != MEMORY and not is_postgres(chosen)
        where = ["--db", str(Path(chosen).resolve()) if local else chosen]
    try:
        hooks = write_hook(Path(v["repo"]), where, fail_closed, v["force"])
    except GuardError as error:
        output.line(f"planledger guard: {error}", stderr=True)
        raise SystemExit(EXIT_REFUSED) from None
    output.line(f"installed {', '.join(map(str, hooks))} ({' '.join(where)}"
                f"{', fails closed' if fail_closed else ''})")


def check(v: Values) -> None:
    from planledger.api.guard import GuardError, changed_files, refusals, session_of

    fail_closed, token = v["fail_closed"], v["token"]
    try:
        files = changed_files(Path(v["repo"]))
    except GuardError as error:
        _unsure(str(error), fail_closed)
        return
    if not files:
        return
    committer = session_of(v["session"], token)
    try:
        found = refusals(files, _asker(v["db"], v["url"], token, committer))
    except Exception as error:
        _refused_or_unsure(error, fail_closed)
        return
    if found:
        lines = "\n".join(f"  {r.describe()}" for r in found)
        output.line("planledger guard: this commit changes paths other sessions hold "
                    f"reserved:\n{lines}\ncoordinate with the holder, wait for the claim to "
                    "end, or unstage those files", stderr=True)
        raise SystemExit(EXIT_REFUSED)


def _asker(db: str | None, url: str | None, token: str | None, committer: str | None,
           ) -> "Ask":
    from planledger.api.client import connect
    from planledger.ledger.storage import MEMORY, is_postgres, resolve_db

    if not url:
        chosen = resolve_db(db)
        if chosen != MEMORY and not is_postgres(chosen) and not Path(chosen).exists():
            raise FileNotFoundError(f"no store at {chosen}")

    def ask(files: Sequence[str]) -> "PathsCheckOut":
        with connect(url, db=db, token=token) as client:
            return client.check_paths(files=files, exclusive_only=True, but=committer)

    return ask


def _refused_or_unsure(error: Exception, fail_closed: bool) -> None:
    """Handle an error from asking the ledger about a commit.

    If the ledger answered and refused the question (a 4xx: a bad credential, a path it
    will not take), the commit is refused with the reason. If the ledger could not answer
    (unreachable, missing, its store down), the commit is left unchecked (`_unsure`)."""
    from planledger.api.errors import problem

    if isinstance(error, ConnectionError | FileNotFoundError):
        _unsure(str(error), fail_closed)
        return
    status, body = problem(error)
    if 400 <= status < 500:
        output.line(f"planledger guard: the ledger refused to check this commit "
                    f"({body.message}); refused", stderr=True)
        raise SystemExit(EXIT_REFUSED)
    _unsure(body.message if status != 500 else f"{type(error).__name__}: {error}",
            fail_closed)


def _unsure(why: str, fail_closed: bool) -> None:
    if fail_closed:
        output.line(f"planledger guard: cannot check this commit ({why}); refused (the hook "
                    "fails closed)", stderr=True)
        raise SystemExit(EXIT_REFUSED)
    output.line(f"planledger guard: cannot check this commit ({why}); allowed without a "
                "check", stderr=True)



def trailers(v: Values) -> None:
    """What the trailer hooks run. It never refuses the commit: any failure is one line
    on stderr, and the commit goes on without the trailers."""
    try:
        _add_trailers(v)
    except (Exception, SystemExit) as error:
        why = str(error).strip().splitlines()
        shown = why[0][:200] if why else type(error).__name__
        output.line(f"planledger guard: no Planledger trailers added ({shown}); the commit "
                    "goes on", stderr=True)


def _add_trailers(v: Values) -> list[tuple[str, str]]:
    from planledger.api.client import connect
    from planledger.api.commit_trailers import add_trailers, has_text, held_claims
    from planledger.api.guard import session_of
    from planledger.ledger.storage import MEMORY, is_postgres, resolve_db

    words, token = v["hook_args"] or [], v["token"]
    session = session_of(v["session"], token)
    if not words or session is None:
        return []  # a commit by no session: nothing to say
    message = Path(words[0]).resolve()
    if not has_text(message):
        return []  # commit-msg adds them once the editor has written the message
    db, url = v["db"], v["url"]
    if not url:
        chosen = resolve_db(db)
        if chosen != MEMORY and not is_postgres(chosen) and not Path(chosen).exists():
            raise FileNotFoundError(f"no store at {chosen}")
    with connect(url, db=db, token=token, session=session) as client:
        claims = held_claims(client, session)
    if not claims:
        return []
    return add_trailers(Path(v["repo"]), message, claims, session)
