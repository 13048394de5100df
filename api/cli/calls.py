"""The verbs that do the work and read it (`claim`, `ready`, `plan show`, …).

One table says how each verb is answered. There are three ways:

- with `--url`, a request to the server, built by api.http.paths from the call's values;
- on the embedded store, through the client (api.client);
- for reads that act for no session, straight from the read model.

Agents drive the ledger through a shell, one process per call. So each call loads only
what its answer needs. A call to a server loads the request table and an HTTP connection,
but not pydantic or the API's schemas. It prints the server's JSON as it comes (`--json`)
or through the renderers (api.cli.render). On the embedded store, `ready` and `plan list`
read the plain fields that the schemas are built from (api.plain_answers). Where it can,
such a read uses the store's file alone (infra.sqlite_reading). The schemas, the write
side and the event-store library were most of such a call's start-up.
"""

import gc
import json
import os
from collections.abc import Callable
from datetime import datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, NamedTuple

from planledger.api.cli import EXIT_BOUNCED, EXIT_ERROR, EXIT_NOTHING_READY
from planledger.api.cli.grammar import Values
from planledger.api.http.paths import READS, REQUESTS, Request, sent

if TYPE_CHECKING:
    from planledger.api.client import Client
    from planledger.api.plain_answers import Readable
    from planledger.api.runtime import Runtime

# A copy of api.errors.BOUNCE_REASONS (a test checks they are equal). Importing that
# module would load the schemas.
BOUNCE_REASONS = frozenset({"already_claimed", "blocked", "closed", "stale_fence",
                            "not_holder", "paths_reserved", "in_review"})
TIMEOUT = 30.0  # the same timeout as RemoteClient


class Call(NamedTuple):
    """How one verb is answered.

    - `request` builds the request sent to a server.
    - `client` asks the embedded store's client (api.client) the same thing.
    - `show` names the renderer that prints the answer (api.cli.render).
    - `exit_code` picks the exit code from the answer.
    - `here` reads the same answer on the embedded store without a client. Only calls
      that act for no session have it; when it is None, the client answers.
    - `plain` is like `here` for answers that need only the read model. Then the store's
      file can be read without the library (infra.sqlite_reading). A runtime can serve
      it too."""

    request: Callable[[Values], Request]
    client: "Callable[[Client, Values], Any]"
    show: str
    exit_code: Callable[[Values, Any], int] = lambda values, answer: 0
    here: "Callable[[Runtime, Values], Any] | None" = None
    plain: "Callable[[Readable, Values], Any] | None" = None

    @property
    def on_the_store(self) -> "Callable[[Runtime, Values], Any] | None":
        """The function that reads the answer on the embedded store without a client."""
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

    return path_reads.check(runtime, v["patterns"] or [], v["file"] or [],
                            v["exclusive_only"], v["but"])


def _actor(values: Values) -> str | None:
    """The session a token names (<id>.<signature>; the admin token names none)."""
    token = values.get("token")
    return token.rpartition(".")[0] or None if token else None


def _fields(v: Values) -> SimpleNamespace:
    """The call's values as the request table reads a command's fields."""
    return SimpleNamespace(**{"actor": _actor(v) or "-", "cwd": None, "source": None,
                              "model": None, "findings": None, "paths": _claimed(v),
                              "limit": None, "evidence": evidence_record(v),
                              "review": v.get("review") or False, "verdict": _verdict(v),
                              **v})


def _verdict(v: Values) -> str | None:
    """A review's verdict from `--approve` or `--reject` (exactly one; None: not a review)."""
    if "approve" not in v:
        return None
    from planledger.api.cli.parser import UsageError

    if v["approve"] == bool(v["reject"]):
        raise UsageError("give one of --approve or --reject", ("review",))
    return "approve" if v["approve"] else "reject"


def _claimed(v: Values) -> list[dict[str, str]]:
    """A claim's own paths (`--path`, `--shared-path`), as records."""
    return ([{"pattern": p, "mode": "exclusive"} for p in v.get("path") or ()]
            + [{"pattern": p, "mode": "shared"} for p in v.get("shared_path") or ()])


def _write(name: str) -> Callable[[Values], Request]:
    return lambda v: REQUESTS[name](_fields(v))


def _read(name: str) -> Callable[[Values], Request]:
    return lambda v: READS[name](_fields(v))


def _ready(v: Values) -> Request:
    # With a session, the listing is recorded (the ListReady command), as RemoteClient does.
    return (REQUESTS if _actor(v) is not None else READS)["ready"](_fields(v))


def claim_paths(exclusive: list[str] | None, shared: list[str] | None) -> list[Any]:
    """A claim's own paths (`--path`, `--shared-path`), as the ledger takes them."""
    from planledger.ledger.domain.paths import PathSpec

    return ([PathSpec(p) for p in exclusive or ()]
            + [PathSpec(p, "shared") for p in shared or ()])


def _new_step(v: Values) -> SimpleNamespace:
    """`planledger add`'s values as the request table reads an AddStep's fields (the
    priority as typed, `1` or beads' `P1`: the server reads both)."""
    return SimpleNamespace(plan=v["plan"], title=v["title"], body=v["body"] or "",
                           depends_on=v["depends_on"] or [], paths=[], key=v["key"],
                           priority=v["priority"], parent=v["parent"],
                           discovered_from=v["discovered_from"], labels=v["label"] or [])


def _add(client: "Client", v: Values) -> Any:
    from planledger.api.schemas import StepIn
    from planledger.ledger.domain.plans import priority_from_text

    new = _new_step(v)
    priority = None if new.priority is None else priority_from_text(new.priority)
    return client.add_step(new.plan, StepIn(
        title=new.title, body=new.body, depends_on=new.depends_on, key=new.key,
        priority=priority, parent=new.parent, discovered_from=new.discovered_from,
        labels=new.labels))


def _closing(action: str) -> "Callable[[Client, Values], Any]":
    return lambda c, v: getattr(c, action)(v["step_id"], v["fence"], v["note"])


def evidence_record(v: Values) -> dict[str, Any] | None:
    """A completion's evidence (`--commit`, `--branch`, `--pr`, `--check`) as the record
    the API takes (ledger.domain.evidence checks it); None when none is given. A check
    reads NAME=RESULT[:SUMMARY]: the name runs to the first `=`, the result to the `:`."""
    commits, checks = v.get("commit") or [], v.get("check") or []
    if not (commits or checks or v.get("branch") or v.get("pr")):
        return None
    listed = []
    for given in checks:
        name, _, said = given.partition("=")
        result, _, summary = said.partition(":")
        listed.append({"name": name.strip(), "result": result.strip(), "command": None,
                       "summary": summary.strip() or None})
    return {"commits": list(commits), "branch": v.get("branch"), "pr": v.get("pr"),
            "checks": listed}


def _complete(c: "Client", v: Values) -> Any:
    from planledger.ledger.domain.evidence import Evidence

    record = evidence_record(v)
    evidence = Evidence.of_record(record) if record is not None else None
    return c.complete(v["step_id"], v["fence"], v["note"], evidence,
                      claim_next=v["claim_next"], lease=v["lease_seconds"])


CALLS: dict[tuple[str, ...], Call] = {
    ("plan", "list"): Call(_read("plans"), lambda c, v: c.plans(), "plans",
                           plain=_plans_here),
    ("plan", "show"): Call(_read("plan"), lambda c, v: c.plan(v["plan"]), "plan",
                           here=lambda r, v: _reads().plan(r, v["plan"])),
    ("ready",): Call(_ready, lambda c, v: c.ready(v["plan"]), "ready", plain=_ready_here),
    ("step",): Call(_read("step"), lambda c, v: c.step(v["step_id"]), "step",
                    here=lambda r, v: _reads().step_detail(r, v["step_id"])),
    ("log",): Call(_read("log"), lambda c, v: c.log(v["after"], v["limit"]), "log",
                   here=lambda r, v: _reads().log_page(r, v["after"], v["limit"])),
    ("session", "start"): Call(_write("session.start"),
                               lambda c, v: c.start_session(v["session_name"]),
                               "session_started"),
    ("session", "end"): Call(_write("session.end"), lambda c, v: c.end_session(),
                             "session_ended"),
    ("session", "show"): Call(_read("session"), lambda c, v: c.session(v["session_id"]),
                              "session",
                              here=lambda r, v: _reads().session(r, v["session_id"])),
    ("claim",): Call(_write("claim"), lambda c, v: c.claim(
        v["step_id"], v["lease_seconds"], claim_paths(v["path"], v["shared_path"])),
        "claim"),
    ("claim-next",): Call(
        _write("claim_next"),
        lambda c, v: c.claim_next(v["plan"], v["lease_seconds"], v["wait_seconds"],
                                  review=v["review"]),
        "claim_next",
        exit_code=lambda v, answer: 0 if answer["claimed"] is not None else EXIT_NOTHING_READY),
    ("heartbeat",): Call(_write("heartbeat"),
                         lambda c, v: c.heartbeat(v["step_id"], v["lease_seconds"]), "claim"),
    ("complete",): Call(_write("complete"), _complete, "change"),
    ("review",): Call(_write("review"),
                      lambda c, v: c.review(v["step_id"], _verdict(v) or "", v["note"]),
                      "change"),
    ("release",): Call(_write("release"), _closing("release"), "change"),
    ("drop",): Call(_write("drop"), _closing("drop"), "change"),
    ("note",): Call(_write("note"), lambda c, v: c.add_note(v["step_id"], v["text"]),
                    "note_added"),
    ("add",): Call(lambda v: REQUESTS["step.add"](_new_step(v)), _add, "step_added"),
    ("paths", "check"): Call(
        _read("paths.check"), lambda c, v: c.check_paths(
            v["patterns"] or [], v["file"] or [], v["exclusive_only"], v["but"]),
        "paths_found", here=_paths_check,
        exit_code=lambda v, answer: (EXIT_BOUNCED if v["exclusive_only"]
                                     and answer["reserved"] else 0)),
}


def answer(values: Values) -> int:
    """Answer the call and return its exit code: to the server at --url, else on the
    embedded store."""
    call = CALLS[values["words"]]
    if values["url"]:
        return _answer_remote(call, values)
    acting = values.get("token") or values.get("session")
    if call.on_the_store is not None and not acting:
        answered = _answer_here(call, values)
        if answered is not None:
            return answered
    return _answer_with_client(call, values)


def _answer_remote(call: Call, values: Values) -> int:
    from planledger.api.remote_http import Connection, NoAnswer, not_planledger

    method, path, body, params = sent(call.request(values))
    try:
        connection = Connection(values["url"], TIMEOUT)
    except ValueError as error:
        return _refused(str(error), EXIT_ERROR)
    # api.client.KEY_SETTING, named here: importing it would load pydantic.
    credential = values.get("token") or os.environ.get("PLANLEDGER_KEY")
    if credential:
        connection.headers["Authorization"] = f"Bearer {credential}"
    try:
        response = connection.request(method, path, params=params, body=body,
                                      timeout=TIMEOUT + (values.get("wait_seconds") or 0))
    except NoAnswer as cut:
        return _refused(f"cannot reach the server: {cut}", EXIT_ERROR)
    finally:
        connection.close()
    if response.status >= 400:
        return _error(response.status, response.body)
    try:
        return _show(call, values, response.json())
    except ValueError as error:  # not JSON (api.remote_http.NotPlanledger)
        return _refused(str(error), EXIT_ERROR)
    except (KeyError, TypeError, AttributeError, IndexError):
        # JSON, but no answer this call knows: the fast path reads it without its schema.
        return _refused(str(not_planledger(response.status, "JSON of another shape")),
                        EXIT_ERROR)


def _answer_here(call: Call, values: Values) -> int | None:
    """Answer a read on the embedded store, opened as `connect` opens it.

    Returns the exit code, or None when the read fails in a way this path cannot word.
    A read changes nothing, so the caller can then safely ask the client, which reports
    the failure in its own way."""
    read = call.on_the_store
    assert read is not None
    # Pause the garbage collector while the store's modules load and the read runs. They
    # make tens of thousands of objects that live until the process ends, so scanning them
    # is wasted work (figure: bench/findings.md). The read's fold pauses it too
    # (projections.log).
    collecting = gc.isenabled()
    gc.disable()
    try:
        from planledger.api.settings import load_settings

        db = load_settings(db=values["db"]).db
        result = _read_file(call.plain, db, values) if call.plain else _UNREAD
        if result is _UNREAD:
            from planledger.api.runtime import open_runtime

            runtime = open_runtime(db, checkpoints=True)
            try:
                runtime.secret  # noqa: B018 (as connect: a store whose secret fails, fails)
                result = read(runtime, values)
            finally:
                runtime.close()
    except Exception as error:  # worded, else left to the client to answer
        return word_error(error)
    finally:
        if collecting:
            gc.enable()
    return _show(call, values, _dumped(result, bool(values.get("json"))))


_UNREAD = object()  # _read_file's answer where the file cannot be read without the library


def _read_file(read: "Callable[[Readable, Values], Any]", db: str | None,
               values: Values) -> Any:
    """The answer read from the embedded store's file alone (infra.sqlite_reading).

    This avoids loading the eventsourcing library, a large part of a short call's start-up
    (figure: bench/findings.md). The result is _UNREAD when the store is not such a file,
    or holds something that reader cannot read exactly as the library does. The caller
    then opens the store through the library, which answers as always."""
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


def _answer_with_client(call: Call, values: Values) -> int:
    """The call on the embedded store through its client (`connect`: the service, acting
    for the session)."""
    from planledger.api.client import connect

    try:
        client = connect(None, db=values["db"], token=values.get("token"),
                         session=values.get("session"))
    except Exception as error:  # nothing is written before the store is open
        return _worded(error)
    try:
        result = call.client(client, values)
        return _show(call, values, _dumped(result, bool(values["json"])))
    except Exception as error:
        return _worded(error)
    finally:
        client.close()


def _worded(error: Exception) -> int:
    """Print the error and return its exit code.

    An error with no wording is a bug, so it is raised again with its traceback."""
    code = word_error(error)
    if code is None:
        raise error
    return code


def _dumped(result: Any, as_json: bool) -> Any:
    """The answer's fields, in the form api.cli.common.emit passes on.

    Plain fields pass through unchanged; `_show` writes their moments as the schemas'
    JSON does."""
    mode = "json" if as_json else "python"
    if isinstance(result, list):
        return [r if isinstance(r, dict) else r.model_dump(mode=mode) for r in result]
    return result if isinstance(result, dict) else result.model_dump(mode=mode)


def _show(call: Call, values: Values, data: Any) -> int:
    from planledger.api.cli import output

    if values.get("json"):
        output.echo(json.dumps(data, indent=2, default=_json_moment))
    else:
        from planledger.api.cli import render

        getattr(render, call.show)(data)
    return call.exit_code(values, data)


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
    """Print a server's error answer and return its exit code (3 for a bounce, else 1).

    The wording matches `word_error`: the problem body's message. Where possible the body
    is read without loading the schemas."""
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

    refused = RemoteError(status, Response(status, raw).problem())
    code = word_error(refused)
    if code is None:
        raise refused
    return code


def word_error(error: BaseException) -> int | None:
    """Print the error's message on stderr and return its exit code.

    The code is 3 for a bounce and 1 otherwise. Every path of the command line words
    errors here (see api.cli.common.answering_errors). The result is None for an error
    with no wording: that is a bug, and the caller raises it."""
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
