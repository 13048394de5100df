"""One interface over two ways in: the embedded store (the service, in this process) or a
running server (its HTTP API). Commands call a `Client` and never care which."""

import getpass
import os
from collections.abc import Sequence
from types import SimpleNamespace, TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from pydantic import BaseModel, TypeAdapter

from planledger.api.errors import Replayed, Unauthorized
from planledger.api.http.paths import READS, REQUESTS, Request, request_for, sent
from planledger.api.remote_http import Connection, NoAnswer
from planledger.api.schemas import (
    ClaimNextOut,
    ClaimOut,
    KeyIssuedOut,
    KeyOut,
    KeysOut,
    LogPageOut,
    NoteAddedOut,
    PathsCheckOut,
    PlanCreatedOut,
    PlanIn,
    PlanOut,
    PlanSummaryOut,
    ReadyOut,
    SessionEndOut,
    SessionOut,
    SessionStartOut,
    StepChangeOut,
    StepDetailOut,
    StepIn,
    StepRefOut,
    StepRevisionIn,
    TimelineOut,
)
from planledger.ledger import commands as c
from planledger.ledger.domain.evidence import Evidence
from planledger.ledger.domain.ids import local_operator
from planledger.ledger.domain.paths import PathSpec

KEY_SETTING = "PLANLEDGER_KEY"  # the access key a client sends where no session token is

if TYPE_CHECKING:  # a server's client loads neither the service nor the store
    from planledger.api.service import Service

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class RemoteError(Replayed):
    """An error answer from a server: its status and body, as `api.errors.problem` reads."""


class Unreachable(ConnectionError):
    """The server did not answer (refused, timed out, cut off): the HTTP client's own error
    as a message, so callers need not load the client to catch it."""


class Client:
    """The ledger's operations for a command or a script, defined once: each builds its
    command value and `execute`s it, on the embedded store (`LocalClient`) or a server
    (`RemoteClient`), which answer the same schema. `actor` is the session the client
    acts for, once it has one."""

    actor: str | None = None

    # --- how a transport carries commands and reads ------------------------------------

    def execute(self, command: c.Command[Any], out: type[M]) -> M:
        raise NotImplementedError

    def start_session(self, name: str | None = None) -> SessionStartOut:
        raise NotImplementedError

    @property
    def author(self) -> str:
        """Who plan and step changes are by: the client's session (or its operator)."""
        return self._session()

    def session(self, session_id: str) -> SessionOut:
        raise NotImplementedError

    def plans(self) -> list[PlanSummaryOut]:
        raise NotImplementedError

    def plan(self, slug: str) -> PlanOut:
        raise NotImplementedError

    def ready(self, slug: str) -> ReadyOut:
        raise NotImplementedError

    def step(self, step_id: str) -> StepDetailOut:
        raise NotImplementedError

    def log(self, after: int = 0, limit: int = 100) -> LogPageOut:
        raise NotImplementedError

    def issue_key(self, name: str, role: str) -> KeyIssuedOut:
        """A new access key (an admin's): the answer holds the key, the only time."""
        raise NotImplementedError

    def keys(self) -> KeysOut:
        raise NotImplementedError

    def revoke_key(self, name: str) -> KeyOut:
        return self.execute(c.RevokeKey(name, self.author), KeyOut)

    def timeline(self, plan: str | None = None, sessions: Sequence[str] = ()) -> TimelineOut:
        raise NotImplementedError

    def check_paths(self, patterns: Sequence[str] = (), files: Sequence[str] = (),
                    exclusive_only: bool = False, but: str | None = None) -> PathsCheckOut:
        """Who holds what: the live reservations the patterns overlap or the files (taken
        literally) fall under; every live one when neither is given; `but` a session's
        left out."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # --- the operations ---------------------------------------------------------------

    def end_session(self) -> SessionEndOut:
        return self.execute(c.EndSession(self._session()), SessionEndOut)

    def create_plan(self, plan: PlanIn) -> PlanCreatedOut:
        return self.execute(plan.command(self.author), PlanCreatedOut)

    def add_step(self, plan: str, step: StepIn) -> StepRefOut:
        return self.execute(step.command(plan, self.author), StepRefOut)

    def revise_step(self, step_id: str, revision: StepRevisionIn) -> StepRefOut:
        return self.execute(revision.command(step_id, self.author), StepRefOut)

    def claim(self, step_id: str, lease: int | None = None,
              paths: Sequence[PathSpec] = ()) -> ClaimOut:
        """Claim the step; `paths`: more to reserve with it, beside the step's own."""
        return self.execute(c.Claim(step_id, self._session(), lease, tuple(paths)), ClaimOut)

    def claim_next(self, slug: str, lease: int | None = None, wait: int = 0,
                   review: bool = False) -> ClaimNextOut:
        """Claim the plan's next step (by priority, then the longest chain of steps waiting
        on it, then the oldest); with `wait` (seconds), wait for one when none is
        claimable yet. With `review`, take a step in review to review instead."""
        return self.execute(c.ClaimNext(slug, self._session(), lease, wait, review),
                            ClaimNextOut)

    def review(self, step_id: str, verdict: str, note: str | None = None) -> StepChangeOut:
        """A reviewer's verdict on a step in review: "approve" (done) or "reject" (open
        again, `note` handed to its next claimer)."""
        return self.execute(c.Review(step_id, self._session(), verdict, note), StepChangeOut)

    def heartbeat(self, step_id: str, lease: int | None = None) -> ClaimOut:
        return self.execute(c.Heartbeat(step_id, self._session(), lease), ClaimOut)

    def complete(self, step_id: str, fence: int | None = None, note: str | None = None,
                 evidence: Evidence | None = None) -> StepChangeOut:
        """Complete the step; `evidence`: the commits, change request and checks that
        show the work (ledger.domain.evidence)."""
        return self.execute(c.Complete(step_id, self._session(), fence, note, evidence),
                            StepChangeOut)

    def release(self, step_id: str, fence: int | None = None,
                note: str | None = None) -> StepChangeOut:
        return self.execute(c.Release(step_id, self._session(), fence, note), StepChangeOut)

    def drop(self, step_id: str, fence: int | None = None,
             note: str | None = None) -> StepChangeOut:
        return self.execute(c.Drop(step_id, self.author, fence, note), StepChangeOut)

    def add_note(self, step_id: str, text: str) -> NoteAddedOut:
        return self.execute(c.AddNote(step_id, self.author, text), NoteAddedOut)

    def reopen(self, step_id: str) -> StepChangeOut:
        return self.execute(c.Reopen(step_id, self.author), StepChangeOut)

    def _session(self) -> str:
        if self.actor is None:
            raise Unauthorized("this command acts for a session: pass --session ID (or "
                               "--token), or set PLANLEDGER_SESSION")
        return self.actor

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def connect(url: str | None = None, *, db: str | None = None, token: str | None = None,
            session: str | None = None, key: str | None = None) -> Client:
    """The ledger's operations for a command or a script: on the server at `url`, else on
    the embedded store `db` (default ./.planledger/ledger.sqlite), acting for the session
    `token` proves (or, on the embedded store, `session` names). A client with no session
    acts for the one it starts (`start_session`). On a server that requires access keys,
    `key` (default: PLANLEDGER_KEY) is sent where no session token is, and a session
    started takes its role. `planledger.Client` is this."""
    if url:
        return RemoteClient(url, token, key=key or os.environ.get(KEY_SETTING) or None)
    from planledger.api.identity import Identity
    from planledger.api.runtime import open_runtime
    from planledger.api.service import Service
    from planledger.api.settings import load_settings

    settings = load_settings(db=db)
    runtime = open_runtime(settings.db, checkpoints=True)
    identity = Identity(runtime.secret, settings.admin_token)
    actor = identity.session_of(token) if token and not session else session
    return LocalClient(Service(runtime, settings, identity), actor)


def operator_name() -> str:
    """The OS user running this command (its uid where the system names none)."""
    try:
        return getpass.getuser()[:64]
    except (OSError, KeyError):
        return f"uid-{os.getuid()}"


class LocalClient(Client):
    """The embedded store: runs commands through the service, acting for `actor` (if
    any). Plan and step changes made without a session are the local operator's
    (`local:<OS user>`): whoever can open the store's file is its operator, and the log
    names them. The read operations are imported where used, so that a server's client
    (`--url`) starts without the store's modules."""

    def __init__(self, service: "Service", actor: str | None) -> None:
        self.service = service
        self.actor = actor

    def execute(self, command: c.Command[Any], out: type[M]) -> M:
        return self.service.answer(command, out)

    @property
    def author(self) -> str:
        return self.actor or local_operator(operator_name())

    def start_session(self, name: str | None = None) -> SessionStartOut:
        # The operator holds the store's file, so its sessions are the admin's.
        started = self.service.start_session(c.StartSession(name, role="admin"))
        self.actor = self.actor or started.session_id
        return started

    def session(self, session_id: str) -> SessionOut:
        from planledger.api import reads

        return reads.session(self.service.runtime, session_id)

    def plans(self) -> list[PlanSummaryOut]:
        from planledger.api import reads

        return reads.plans(self.service.runtime)

    def plan(self, slug: str) -> PlanOut:
        from planledger.api import reads

        return reads.plan(self.service.runtime, slug)

    def ready(self, slug: str) -> ReadyOut:
        return self.service.ready(slug, self.actor)

    def step(self, step_id: str) -> StepDetailOut:
        from planledger.api import reads

        return reads.step_detail(self.service.runtime, step_id)

    def log(self, after: int = 0, limit: int = 100) -> LogPageOut:
        from planledger.api import reads

        return reads.log_page(self.service.runtime, after, limit)

    def issue_key(self, name: str, role: str) -> KeyIssuedOut:
        return self.service.issue_key(name, role, self.author)

    def keys(self) -> KeysOut:
        return self.service.keys()

    def timeline(self, plan: str | None = None, sessions: Sequence[str] = ()) -> TimelineOut:
        from planledger.api import reads

        return reads.timeline(self.service.timelines, plan, sessions)

    def check_paths(self, patterns: Sequence[str] = (), files: Sequence[str] = (),
                    exclusive_only: bool = False, but: str | None = None) -> PathsCheckOut:
        from planledger.api import path_reads

        return path_reads.check(self.service.runtime, patterns, files, exclusive_only, but)

    def close(self) -> None:
        self.service.waiting.close()
        self.service.runtime.close()


class RemoteClient(Client):
    """A running server, over its HTTP API, with the session token (if any). A command
    travels as the request of the route that builds the same command (`api.http.paths`)."""

    def __init__(self, url: str, token: str | None, timeout: float = 30.0,
                 key: str | None = None) -> None:
        self.http = Connection(url, timeout)
        self.key = key  # sent while no session token is
        self._send(token or key)
        self.timeout = timeout
        # A session token names its session (<id>.<signature>); the admin token and
        # access keys none.
        self.actor = token.rpartition(".")[0] or None if token else None

    def _send(self, credential: str | None) -> None:
        if credential:
            self.http.headers["Authorization"] = f"Bearer {credential}"
        else:
            self.http.headers.pop("Authorization", None)

    def execute(self, command: c.Command[Any], out: type[M]) -> M:
        # A claim-next that waits may be answered that much later than any other call.
        wait = command.wait_seconds if isinstance(command, c.ClaimNext) else 0
        return self._send_request(out, request_for(command), waits=wait)

    def _read(self, out: type[T], name: str, **fields: Any) -> T:
        """The read `name` of api.http.paths.READS, made of `fields`."""
        return self._send_request(out, sent(READS[name](SimpleNamespace(**fields))))

    def _session(self) -> str:
        # The server judges the token (a missing one is its 401, naming what to send); the
        # command's actor only names the session in a path (session end).
        return self.actor or "-"

    @property
    def author(self) -> str:
        return self._session()

    def _send_request(self, out: type[T], request: Request, waits: float = 0) -> T:
        try:
            response = self.http.request(request.method, request.path, params=request.params,
                                         body=request.body, timeout=self.timeout + waits)
        except NoAnswer as cut:
            raise Unreachable(str(cut)) from cut
        if response.status >= 400:
            try:
                error = response.json()
            except ValueError:
                error = {"reason": "http", "message": response.text[:500]}
            raise RemoteError(response.status, error)
        return TypeAdapter(out).validate_python(response.json())

    def start_session(self, name: str | None = None) -> SessionStartOut:
        started = self._send_request(SessionStartOut, sent(REQUESTS["session.start"](
            SimpleNamespace(session_name=name, cwd=None, source=None, model=None))))
        if self.actor is None and started.token:
            self._send(started.token)
            self.actor = started.session_id
        return started

    def create_plan(self, plan: PlanIn) -> PlanCreatedOut:
        """Create the plan as this client's session or key; without either, as a session
        started for it (named after the OS user) and ended straight after: the log names
        its author."""
        if "Authorization" in self.http.headers:
            return super().create_plan(plan)
        self.start_session(f"{operator_name()} (plan create)")
        try:
            return super().create_plan(plan)
        finally:
            self.end_session()
            self._send(self.key)
            self.actor = None

    def session(self, session_id: str) -> SessionOut:
        return self._read(SessionOut, "session", session_id=session_id)

    def plans(self) -> list[PlanSummaryOut]:
        return self._read(list[PlanSummaryOut], "plans")

    def plan(self, slug: str) -> PlanOut:
        return self._read(PlanOut, "plan", plan=slug)

    def ready(self, slug: str) -> ReadyOut:
        # With a session, the listing is recorded, as on the embedded store.
        if self.actor is not None:
            return self.execute(c.ListReady(slug, self.actor), ReadyOut)
        return self._read(ReadyOut, "ready", plan=slug)

    def step(self, step_id: str) -> StepDetailOut:
        return self._read(StepDetailOut, "step", step_id=step_id)

    def log(self, after: int = 0, limit: int = 100) -> LogPageOut:
        return self._read(LogPageOut, "log", after=after, limit=limit)

    def issue_key(self, name: str, role: str) -> KeyIssuedOut:
        return self._send_request(KeyIssuedOut, sent(REQUESTS["key.issue"](
            SimpleNamespace(key_name=name, role=role))))

    def keys(self) -> KeysOut:
        return self._read(KeysOut, "keys")

    def timeline(self, plan: str | None = None, sessions: Sequence[str] = ()) -> TimelineOut:
        return self._read(TimelineOut, "timeline", plan=plan, sessions=sessions)

    def check_paths(self, patterns: Sequence[str] = (), files: Sequence[str] = (),
                    exclusive_only: bool = False, but: str | None = None) -> PathsCheckOut:
        return self._read(PathsCheckOut, "paths.check", patterns=patterns, file=files,
                          exclusive_only=exclusive_only, but=but)

    def close(self) -> None:
        self.http.close()
