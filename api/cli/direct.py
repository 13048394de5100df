"""Command line calls answered without typer: a call to a server (`--url`, or
PLANLEDGER_URL) without pydantic or the API's schemas either, and a call on the embedded
store without typer or rich.

Agents drive the ledger through a shell, one process per call, and such a call did little
but start: loading typer, rich and building the schemas took ~13x a bare interpreter start
(issue 19). Here the commands in the table below read their arguments with a small parser
as click reads them. To a server, they send the request `RemoteClient` sends and print the
server's JSON as it comes (`--json`) or through the same renderers (api.cli.render). On the
embedded store, the reads that act for no session open the store and ask api.reads, as
`LocalClient` does, without the service around it (`ready` and `plan list` ask
api.plain_answers, the fields the schemas are made from: the schemas and the write side
were two thirds of such a call's start-up); writes, and reads for a session, go
through the client the full command line opens (`CLIENT_CALLS`).

Only what this module is sure of is answered here: a call it does not fully understand
(`--help`, an unknown or malformed option, a missing argument, a value out of range, a
command not in the table) is left to the full command line, which answers it as always;
so is an error answer it cannot read. tests/e2e/test_cli_direct.py holds the output, the
exit code and the error text of both paths equal, command by command.
"""

import gc
import json
import os
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import quote, urlsplit

from planledger.api.cli import EXIT_BOUNCED, EXIT_ERROR, EXIT_NOTHING_READY

if TYPE_CHECKING:
    from planledger.api.client import Client
    from planledger.api.plain_answers import Readable
    from planledger.api.runtime import Runtime

Values = dict[str, Any]
# method, path, JSON body, query parameters, seconds the server may wait before answering
Request = tuple[str, str, Any, dict[str, Any] | None, int]

# api.errors.BOUNCE_REASONS (a test holds them equal): that module loads the schemas.
BOUNCE_REASONS = frozenset({"already_claimed", "blocked", "closed", "stale_fence",
                            "not_holder", "paths_reserved"})
MAX_WAIT_SECONDS = 300  # ledger.commands.MAX_WAIT_SECONDS (a test holds them equal)
TIMEOUT = 30.0  # RemoteClient's


class Command(NamedTuple):
    """A command as this module answers it: its positional arguments (`many`: the last
    takes any number), its options beyond --url/--db/--json (flag -> (name, kind): 'int',
    'str', 'list' or 'flag'), whether it reads the token, the request it sends, the
    renderer of its answer (api.cli.render), its exit code for an answer, and `here`: the
    same answer read on the embedded store (None: the full command line answers there),
    or `plain` where that answer reads the read model alone, so the store's file can be
    read without the library (infra.sqlite_reading; a runtime serves it too)."""

    arguments: tuple[str, ...]
    options: dict[str, tuple[str, str]]
    request: Callable[[Values], Request]
    show: str
    token: bool = False
    many: bool = False
    exit_code: Callable[[Values, Any], int] = lambda values, answer: 0
    here: "Callable[[Runtime, Values], Any] | None" = None
    plain: "Callable[[Readable, Values], Any] | None" = None

    @property
    def on_the_store(self) -> "Callable[[Runtime, Values], Any] | None":
        """The answer read on the embedded store through its runtime, if any."""
        return self.here or self.plain


def _reads() -> Any:
    from planledger.api import reads

    return reads


def _plain() -> Any:
    """The answers read as plain fields, without the schemas (api.plain_answers): printed
    as the schemas' would be."""
    from planledger.api import plain_answers

    return plain_answers


def _plans_here(reading: "Readable", v: Values) -> Any:
    return _plain().plans(reading)


def _ready_here(reading: "Readable", v: Values) -> Any:
    return _plain().ready(reading, v["plan"])


def _paths_check(runtime: "Runtime", v: Values) -> Any:
    from planledger.api import path_reads

    return path_reads.check(runtime, v.get("patterns") or [], v.get("file") or [],
                            v.get("exclusive_only", False), v.get("but"))


def _part(text: str) -> str:
    return quote(text, safe="")


def _actor(values: Values) -> str | None:
    """The session a token names (<id>.<signature>; the admin token names none)."""
    token = values.get("token")
    return token.rpartition(".")[0] or None if token else None


def _body(**fields: Any) -> dict[str, Any]:
    """A command's body as api.http.paths.request_for sends it: without its absent fields."""
    return {name: value for name, value in fields.items() if value is not None}


def _closing(action: str) -> Callable[[Values], Request]:
    return lambda v: ("POST", f"/api/steps/{_part(v['step'])}/{action}",
                      _body(fence=v.get("fence"), note=v.get("note")), None, 0)


def _ready(v: Values) -> Request:
    # With a session, the listing is recorded (the ListReady command), as RemoteClient does.
    if _actor(v) is not None:
        return "POST", f"/api/plans/{_part(v['plan'])}/ready", None, None, 0
    return "GET", f"/api/plans/{v['plan']}/ready", None, None, 0


def _claim(v: Values) -> Request:
    paths = ([{"pattern": p, "mode": "exclusive"} for p in v.get("path", [])]
             + [{"pattern": p, "mode": "shared"} for p in v.get("shared_path", [])])
    return ("POST", f"/api/steps/{_part(v['step'])}/claim",
            _body(lease_seconds=v.get("lease"), paths=paths or None), None, 0)


def _check(v: Values) -> Request:
    body = {"paths": v.get("patterns", []), "files": v.get("file", []),
            "exclusive_only": v.get("exclusive_only", False), **_body(but=v.get("but"))}
    return "POST", "/api/reservations/check", body, None, 0


STEP_CLOSE = {"--fence": ("fence", "int"), "--note": ("note", "str")}
LEASE = {"--lease": ("lease", "int")}

ANSWERED: dict[tuple[str, ...], Command] = {
    ("plan", "list"): Command((), {}, lambda v: ("GET", "/api/plans", None, None, 0),
                              "plans", plain=_plans_here),
    ("plan", "show"): Command(("slug",), {}, lambda v: (
        "GET", f"/api/plans/{v['slug']}", None, None, 0), "plan",
        here=lambda r, v: _reads().plan(r, v["slug"])),
    ("ready",): Command(("plan",), {}, _ready, "ready", token=True,
                        plain=_ready_here),
    ("step",): Command(("step_id",), {}, lambda v: (
        "GET", f"/api/steps/{v['step_id']}", None, None, 0), "step",
        here=lambda r, v: _reads().step_detail(r, v["step_id"])),
    ("log",): Command((), {"--after": ("after", "int"), "--limit": ("limit", "int")},
                      lambda v: ("GET", "/api/log", None, {"after": v.get("after", 0),
                                                           "limit": v.get("limit", 100)}, 0),
                      "log", here=lambda r, v: _reads().log_page(r, v.get("after", 0),
                                                                 v.get("limit", 100))),
    ("session", "start"): Command((), {"--name": ("name", "str")}, lambda v: (
        "POST", "/api/sessions", {"name": v.get("name")}, None, 0), "session_started"),
    ("session", "end"): Command((), {}, lambda v: (
        "POST", f"/api/sessions/{_part(_actor(v) or '-')}/end", {}, None, 0),
        "session_ended", token=True),
    ("session", "show"): Command(("session_id",), {}, lambda v: (
        "GET", f"/api/sessions/{v['session_id']}", None, None, 0), "session",
        here=lambda r, v: _reads().session(r, v["session_id"])),
    ("claim",): Command(("step",), {**LEASE, "--path": ("path", "list"),
                                    "--shared-path": ("shared_path", "list")},
                        _claim, "claim", token=True),
    ("claim-next",): Command(
        ("plan",), {**LEASE, "--wait": ("wait", "int"), "--wait-seconds": ("wait", "int")},
        lambda v: ("POST", f"/api/plans/{_part(v['plan'])}/claim-next",
                   _body(lease_seconds=v.get("lease"), wait_seconds=v.get("wait") or None),
                   None, v.get("wait", 0)),
        "claim_next", token=True,
        exit_code=lambda v, answer: 0 if answer["claimed"] is not None else EXIT_NOTHING_READY),
    ("heartbeat",): Command(("step",), LEASE, lambda v: (
        "POST", f"/api/steps/{_part(v['step'])}/heartbeat",
        _body(lease_seconds=v.get("lease")), None, 0), "claim", token=True),
    ("complete",): Command(("step",), STEP_CLOSE, _closing("complete"), "change", token=True),
    ("release",): Command(("step",), STEP_CLOSE, _closing("release"), "change", token=True),
    ("drop",): Command(("step",), STEP_CLOSE, _closing("drop"), "change", token=True),
    ("note",): Command(("step", "text"), {}, lambda v: (
        "POST", f"/api/steps/{_part(v['step'])}/notes", {"text": v["text"]}, None, 0),
        "note_added", token=True),
    ("paths", "check"): Command(
        ("patterns",), {"--file": ("file", "list"), "--exclusive-only": ("exclusive_only",
                                                                          "flag"),
                        "--but": ("but", "str")},
        _check, "paths_found", many=True, here=_paths_check,
        exit_code=lambda v, answer: (EXIT_BOUNCED if v.get("exclusive_only")
                                     and answer["reserved"] else 0)),
}


def claim_paths(exclusive: list[str] | None, shared: list[str] | None) -> list[Any]:
    """A claim's own paths (`--path`, `--shared-path`), as the ledger takes them."""
    from planledger.ledger.domain.paths import PathSpec

    return ([PathSpec(p) for p in exclusive or ()]
            + [PathSpec(p, "shared") for p in shared or ()])


# On the embedded store, what the full command line asks of its client (api.cli.plans,
# work, paths), for the calls `here` does not answer: writes, and reads for a session.
CLIENT_CALLS: dict[tuple[str, ...], Callable[["Client", Values], Any]] = {
    ("plan", "list"): lambda c, v: c.plans(),
    ("plan", "show"): lambda c, v: c.plan(v["slug"]),
    ("ready",): lambda c, v: c.ready(v["plan"]),
    ("step",): lambda c, v: c.step(v["step_id"]),
    ("log",): lambda c, v: c.log(v.get("after", 0), v.get("limit", 100)),
    ("session", "start"): lambda c, v: c.start_session(v.get("name")),
    ("session", "end"): lambda c, v: c.end_session(),
    ("session", "show"): lambda c, v: c.session(v["session_id"]),
    ("claim",): lambda c, v: c.claim(v["step"], v.get("lease"), claim_paths(v.get("path"),
                                                             v.get("shared_path"))),
    ("claim-next",): lambda c, v: c.claim_next(v["plan"], v.get("lease"), v.get("wait", 0)),
    ("heartbeat",): lambda c, v: c.heartbeat(v["step"], v.get("lease")),
    ("complete",): lambda c, v: c.complete(v["step"], v.get("fence"), v.get("note")),
    ("release",): lambda c, v: c.release(v["step"], v.get("fence"), v.get("note")),
    ("drop",): lambda c, v: c.drop(v["step"], v.get("fence"), v.get("note")),
    ("note",): lambda c, v: c.add_note(v["step"], v["text"]),
    ("paths", "check"): lambda c, v: c.check_paths(v.get("patterns") or [],
                                                   v.get("file") or [],
                                                   v.get("exclusive_only", False),
                                                   v.get("but")),
}
assert set(CLIENT_CALLS) == set(ANSWERED), "every command is answered on the embedded store"

SHARED = {"--url": ("url", "str"), "--db": ("db", "str"), "--json": ("json", "flag")}
ACTING = {"--session": ("session", "str"), "--token": ("token", "str")}
# The checks of the requests' schemas (api.schemas.PathsCheckIn) the server would not see.
MAX_CHECKED_PATTERNS, MAX_CHECKED_FILES = 100, 10_000


def parse(args: list[str]) -> tuple[Command, Values] | None:
    """The command `args` name and its values, as click would read them; None when this
    module does not answer it."""
    for length in (2, 1):
        command = ANSWERED.get(tuple(args[:length]))
        if command is not None:
            break
    else:
        return None
    if any("\ud800" <= c <= "\udfff" for arg in args for c in arg):
        return None  # not text: the schemas refuse it, in their own words
    options = {**SHARED, **(ACTING if command.token else {}), **command.options}
    values = _read(args[length:], options, command)
    if values is None:
        return None
    for name, of_acting in (("url", False), ("db", False), ("token", True),
                            ("session", True)):
        if name not in values and (command.token or not of_acting):
            # click ignores an empty one
            values[name] = os.environ.get(f"PLANLEDGER_{name.upper()}") or None
    if values["url"] is None:  # the embedded store
        return (command, values) if 0 <= values.get("wait", 0) <= MAX_WAIT_SECONDS else None
    return (command, values) if _acceptable(values) else None


def _read(args: list[str], options: dict[str, tuple[str, str]],
          command: Command) -> Values | None:
    values: Values = {}
    positional: list[str] = []
    rest = iter(args)
    for arg in rest:
        if arg == "--":
            positional.extend(rest)
            break
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        flag, equals, value = arg.partition("=")
        if flag not in options:
            return None  # --help, a short option, an unknown one: click's to answer
        name, kind = options[flag]
        if kind == "flag":
            if equals:
                return None
            values[name] = True
            continue
        if not equals:
            following = next(rest, None)
            if following is None:
                return None
            value = following
        if kind == "int":
            try:
                values[name] = int(value)
            except ValueError:
                return None
        elif kind == "list":
            values.setdefault(name, []).append(value)
        else:
            values[name] = value
    return _place(positional, command, values)


def _place(positional: list[str], command: Command, values: Values) -> Values | None:
    names = command.arguments
    if command.many:
        if positional:
            values[names[-1]] = positional
        return values
    if len(positional) != len(names):
        return None
    values.update(zip(names, positional, strict=True))
    return values


def _acceptable(values: Values) -> bool:
    url = values.get("url")
    if not url:
        return False  # the embedded store
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a bad port is a ValueError the full path words)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    wait = values.get("wait", 0)
    return (0 <= wait <= MAX_WAIT_SECONDS
            and len(values.get("patterns", ())) <= MAX_CHECKED_PATTERNS
            and len(values.get("file", ())) <= MAX_CHECKED_FILES)


def answer(args: list[str]) -> int | None:
    """Answer the call `args` (what follows `planledger`) and return its exit code; None
    when the full command line must answer it (nothing was sent or written then)."""
    parsed = parse(args)
    if parsed is None:
        return None
    command, values = parsed
    if values["url"] is None:
        acting = values.get("token") or values.get("session")
        if command.on_the_store is not None and not acting:
            return _answer_here(command, values)
        return _answer_with_client(args, values)
    method, path, body, params, waits = command.request(values)
    from planledger.api.remote_http import Connection, NoAnswer

    connection = Connection(values["url"], TIMEOUT)
    # api.client.KEY_SETTING, named here: importing it would load pydantic.
    credential = values.get("token") or os.environ.get("PLANLEDGER_KEY")
    if credential:
        connection.headers["Authorization"] = f"Bearer {credential}"
    try:
        response = connection.request(method, path, params=params, body=body,
                                      timeout=TIMEOUT + waits)
    except NoAnswer as cut:
        return _refused(f"cannot reach the server: {cut}", EXIT_ERROR)
    finally:
        connection.close()
    if response.status >= 400:
        return _error(response.status, response.body)
    return _show(command, values, json.loads(response.body))


def _answer_here(command: Command, values: Values) -> int | None:
    """The read on the embedded store, as `connect` opens it and `LocalClient` reads it.
    None when it fails in a way the full command line does not word (a read changes
    nothing: the full command line asks again, and fails in its own way)."""
    read = command.on_the_store
    assert read is not None
    # The collector is held off while the store's modules load and the read runs: they make
    # tens of thousands of objects that live until the process ends, and scanning them as
    # they come was ~3% of the call (the read's own fold holds it off too: projections.log).
    collecting = gc.isenabled()
    gc.disable()
    try:
        from planledger.api.settings import load_settings

        db = load_settings(db=values["db"]).db
        result = _read_file(command.plain, db, values) if command.plain else _UNREAD
        if result is _UNREAD:
            from planledger.api.runtime import open_runtime

            runtime = open_runtime(db, checkpoints=True)
            try:
                runtime.secret  # noqa: B018 (as connect: a store whose secret fails, fails)
                result = read(runtime, values)
            finally:
                runtime.close()
    except Exception as error:  # worded as the full command line words it, else left to it
        return word_error(error)
    finally:
        if collecting:
            gc.enable()
    return _show(command, values, _dumped(result, bool(values.get("json"))))


_UNREAD = object()  # _read_file's answer where the file cannot be read without the library


def _read_file(read: "Callable[[Readable, Values], Any]", db: str | None,
               values: Values) -> Any:
    """The answer read from the embedded store's file alone (infra.sqlite_reading): the
    eventsourcing library was a fifth of such a call's start-up. _UNREAD where the store
    is not such a file, or holds what that reader does not read as the library does (the
    store is then opened through the library, which answers as always)."""
    import sqlite3

    from planledger.infra.sqlite_reading import Unreadable, open_reading
    from planledger.ledger.storage import resolve_db

    reading = open_reading(resolve_db(db))
    if reading is None:
        return _UNREAD
    try:
        reading.secret  # noqa: B018 (as connect: a store whose secret fails, fails)
        return read(reading, values)
    except (Unreadable, sqlite3.Error):
        return _UNREAD
    finally:
        reading.close()


def _answer_with_client(args: list[str], values: Values) -> int | None:
    """The call on the embedded store through the client the full command line opens
    (`connect`: the service, acting for the session), without typer or rich."""
    words = tuple(args[:2]) if tuple(args[:2]) in ANSWERED else tuple(args[:1])
    command = ANSWERED[words]
    from planledger.api.client import connect

    try:
        client = connect(None, db=values["db"], token=values.get("token"),
                         session=values.get("session"))
    except Exception as error:  # nothing is written before the store is open
        return word_error(error)
    try:
        result = CLIENT_CALLS[words](client, values)
        return _show(command, values, _dumped(result, bool(values.get("json"))))
    except Exception as error:
        code = word_error(error)
        if code is None:
            raise
        return code
    finally:
        client.close()


def _dumped(result: Any, as_json: bool) -> Any:
    """The answer's fields as api.cli.common.emit hands them on (plain fields as they are:
    `_show` writes their moments as the schemas' JSON does)."""
    mode = "json" if as_json else "python"
    if isinstance(result, list):
        return [r if isinstance(r, dict) else r.model_dump(mode=mode) for r in result]
    return result if isinstance(result, dict) else result.model_dump(mode=mode)


def _show(command: Command, values: Values, data: Any) -> int:
    from planledger.api.cli import output

    if values.get("json"):
        output.echo(json.dumps(data, indent=2, default=_json_moment))
    else:
        from planledger.api.cli import render

        getattr(render, command.show)(data)
    return command.exit_code(values, data)


def _json_moment(value: object) -> str:
    """A moment of plain fields as pydantic writes a datetime in JSON: ISO 8601, UTC as Z."""
    if not isinstance(value, datetime):
        raise TypeError(f"{type(value).__name__} is not JSON")
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def _refused(message: str, code: int) -> int:
    from planledger.api.cli import output

    output.line(message, stderr=True)
    return code


def _error(status: int, raw: bytes) -> int:
    """An error answer, worded and coded as the full command line does (`word_error`: the
    problem body's message; 3 for a bounce), read without the schemas where it can be."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if (status != 500 and isinstance(body, dict) and isinstance(body.get("reason"), str)
            and isinstance(body.get("message"), str)):
        bounced = status == 409 and body["reason"] in BOUNCE_REASONS
        return _refused(body["message"], EXIT_BOUNCED if bounced else EXIT_ERROR)
    return _worded_answer(status, raw)


def _worded_answer(status: int, raw: bytes) -> int:
    """An error answer as RemoteClient raises it, worded by `word_error`."""
    from planledger.api.client import RemoteError
    from planledger.api.remote_http import Response

    answer = Response(status, raw)
    try:
        error = answer.json()
    except ValueError:
        error = {"reason": "http", "message": answer.text[:500]}
    refused = RemoteError(status, error)
    code = word_error(refused)
    if code is None:
        raise refused
    return code


def word_error(error: BaseException) -> int | None:
    """What the command line says of an error (api.cli.common.answering_errors): its
    message on stderr, and the exit code for its kind: 3 for a bounce, else 1. None for an
    error it has no words for (a bug, to be raised on)."""
    from planledger.api.cli import output
    from planledger.api.client import RemoteError, Unreachable
    from planledger.api.errors import BOUNCE_REASONS, ConfigError, problem

    if isinstance(error, Unreachable):
        message, code = f"cannot reach the server: {error}", EXIT_ERROR
    elif isinstance(error, ConfigError | ValueError):
        message, code = str(error), EXIT_ERROR
    else:  # every refusal, local or remote, reads the same
        status, body = problem(error)
        if status == 500 and not isinstance(error, RemoteError):
            return None  # a failure of this process's own: raised, with its traceback
        bounced = status == 409 and body.reason in BOUNCE_REASONS
        message, code = body.message, EXIT_BOUNCED if bounced else EXIT_ERROR
        if status == 500:  # the server's own failure, not a refusal
            message = f"the server failed ({status}): {message}"
    output.line(message, stderr=True)
    return code
