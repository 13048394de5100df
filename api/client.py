"""`planledger.Client`: one interface over two ways in, the embedded store (the service, in
this process: `LocalClient`) or a running server (its HTTP API: `RemoteClient`). The
operations are written once, in `Client`, as the command values they send; each transport
carries commands and reads its own way. Scripts and the command line call a `Client` and
never care which."""

import getpass
import os
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from types import SimpleNamespace, TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from pydantic import BaseModel, TypeAdapter, ValidationError

from planledger.api.errors import Replayed, Unauthorized
from planledger.api.http.paths import READS, REQUESTS, Request, request_for, sent
from planledger.api.remote_http import Connection, NoAnswer, not_planledger
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
    """The ledger's operations for a script, on the embedded store or on a server.

    `Client()` opens the embedded store (`db`: an SQLite path, `memory` or a
    postgresql:// URL; default ./.planledger/ledger.sqlite) in this process;
    `Client(url="http://127.0.0.1:8765")` talks to a running server over its HTTP API.
    Either way the methods and their answers (the pydantic models of `api.schemas`) are
    the same: what you get is a `LocalClient` or a `RemoteClient`, both a `Client`.

    A client acts for one session: the one `token` proves (or, on the embedded store, the
    one `session` names), else the first it starts with `start_session`. On a server that
    requires access keys, `key` (default: the PLANLEDGER_KEY setting) is sent while the
    client has no session token, and a session it starts takes the key's role. `timeout`:
    how long to wait for a server's answer, in seconds.

    Used as a context manager, the client ends the sessions it started when the block
    ends (releasing what they still hold), then closes; a session it was only handed
    (`token`, `session`) stays live. `close()` alone ends nothing:

        with Client(url="http://127.0.0.1:8765") as ledger:
            ledger.start_session("nightly script")
            grant = ledger.claim_next(plan="auth-refresh", wait=60).claimed
            if grant:
                ledger.complete(grant.step_id, grant.fence)

    A refusal raises: on the embedded store the ledger's own error
    (`ledger.domain.errors`, e.g. `AlreadyClaimed` naming the holder); from a server a
    `RemoteError` carrying the status and the problem body, or `Unreachable`.
    """

    actor: str | None = None  # the session the client acts for, once it has one

    def __new__(cls, url: str | None = None, *, db: str | None = None,
                token: str | None = None, session: str | None = None,
                key: str | None = None, timeout: float = 30.0) -> Self:
        # `Client(...)` chooses the transport: a server with `url`, else the store.
        chosen: type[Client] = cls
        if cls is Client:
            chosen = RemoteClient if url else LocalClient
        return cast(Self, object.__new__(chosen))

    def __init__(self, url: str | None = None, *, db: str | None = None,
                 token: str | None = None, session: str | None = None,
                 key: str | None = None, timeout: float = 30.0) -> None:
        """Open the store or the connection (see the class): `LocalClient` and
        `RemoteClient` do, each taking these arguments."""
        # The sessions this client started, to end when its block ends (see __exit__).
        self.started: list[SessionStartOut] = []

    # --- how a transport carries commands and reads ------------------------------------

    def execute(self, command: c.Command[Any], out: type[M]) -> M:
        """Run a command value (`ledger.commands`) and answer it as `out`: what every
        operation below does. For commands no method covers."""
        raise NotImplementedError

    def start_session(self, name: str | None = None) -> SessionStartOut:
        """Start a session named `name`; the client acts for it if it acts for none yet.
        The answer's `token` acts for it from anywhere (keep it secret)."""
        raise NotImplementedError

    @property
    def author(self) -> str:
        """Who plan and step changes are by: the client's session (or its operator)."""
        return self._session()

    def session(self, session_id: str) -> SessionOut:
        """A session: its name, whether it ended, and what it holds."""
        raise NotImplementedError

    def plans(self) -> list[PlanSummaryOut]:
        """Every plan, with its progress line."""
        raise NotImplementedError

    def plan(self, plan: str | None = None, *, slug: str | None = None) -> PlanOut:
        """The plan `plan` (its slug): constraints, progress and steps."""
        return self._plan(_plan_named(plan, slug, "plan"))

    def ready(self, plan: str | None = None, *, slug: str | None = None) -> ReadyOut:
        """The plan's claimable steps (and those held and blocked), in the order claims
        take them. With a session, the listing is recorded on its timeline."""
        return self._ready(_plan_named(plan, slug, "ready"))

    def step(self, step_id: str) -> StepDetailOut:
        """A step with its whole history (claims, releases, notes, ...), oldest first."""
        raise NotImplementedError

    def log(self, after: int = 0, limit: int = 100) -> LogPageOut:
        """A page of the event log: `limit` events after position `after`."""
        raise NotImplementedError

    def issue_key(self, name: str, role: str) -> KeyIssuedOut:
        """A new access key (an admin's): the answer holds the key, the only time."""
        raise NotImplementedError

    def keys(self) -> KeysOut:
        """Every access key's name, role and state (never the key itself)."""
        raise NotImplementedError

    def revoke_key(self, name: str) -> KeyOut:
        """Revoke the access key `name` (an admin's): requests carrying it are refused."""
        return self.execute(c.RevokeKey(name, self.author), KeyOut)

    def timeline(self, plan: str | None = None, sessions: Sequence[str] = ()) -> TimelineOut:
        """The merged timeline: one clock, a lane per session; one plan's, or only some
        sessions' lanes."""
        raise NotImplementedError

    def check_paths(self, patterns: Sequence[str] = (), files: Sequence[str] = (),
                    exclusive_only: bool = False, but: str | None = None) -> PathsCheckOut:
        """Who holds what: the live reservations the patterns overlap or the files (taken
        literally) fall under; every live one when neither is given; `but` a session's
        left out."""
        raise NotImplementedError

    def close(self) -> None:
        """Let go of the store or the connection. Ends no session (the block does)."""
        raise NotImplementedError

    def _plan(self, plan: str) -> PlanOut:
        raise NotImplementedError

    def _ready(self, plan: str) -> ReadyOut:
        raise NotImplementedError

    def _end_started(self, started: SessionStartOut) -> None:
        """End a session this client started (it may act for another one now)."""
        raise NotImplementedError

    @contextmanager
    def authored(self, name: str) -> Iterator[None]:
        """A block whose writes all have one author: on a server, the client's session or
        key, else a session named `name` started for the block and ended after it. The
        embedded store always has one (the operator, or `session`)."""
        yield

    # --- the operations ---------------------------------------------------------------

    def end_session(self) -> SessionEndOut:
        """End the client's session, releasing every step it holds."""
        ended = self.execute(c.EndSession(self._session()), SessionEndOut)
        self.started = [s for s in self.started if s.session_id != ended.session_id]
        return ended

    def create_plan(self, plan: PlanIn | c.CreatePlan) -> PlanCreatedOut:
        """Create a plan with its constraints and steps (`api.schemas.PlanIn`, or the
        command itself, as an import builds it: its actor is replaced by this client's)."""
        command = (plan.command(self.author) if isinstance(plan, PlanIn)
                   else replace(plan, actor=self.author))
        return self.execute(command, PlanCreatedOut)

    def add_step(self, plan: str, step: StepIn) -> StepRefOut:
        """Add a step to the plan (work found on the way)."""
        return self.execute(step.command(plan, self.author), StepRefOut)

    def revise_step(self, step_id: str, revision: StepRevisionIn) -> StepRefOut:
        """Change a step's title, body, priority, dependencies or paths."""
        return self.execute(revision.command(step_id, self.author), StepRefOut)

    def claim(self, step_id: str, lease: int | None = None,
              paths: Sequence[PathSpec] = ()) -> ClaimOut:
        """Claim the step for `lease` seconds (default 900); `paths`: more to reserve with
        it, beside the step's own. The answer holds the fence to complete with, and the
        notes left since the step's last claim."""
        return self.execute(c.Claim(step_id, self._session(), lease, tuple(paths)), ClaimOut)

    def claim_next(self, plan: str | None = None, lease: int | None = None, wait: int = 0,
                   *, slug: str | None = None, review: bool = False) -> ClaimNextOut:
        """Claim the plan's next step (by priority, then the longest chain of steps waiting
        on it, then the oldest); with `wait` (seconds), wait for one when none is
        claimable yet. `claimed` is None when nothing was. With `review`, take a step in
        review to review instead (not your own work). (`slug=` is the old name of
        `plan=`.)"""
        named = _plan_named(plan, slug, "claim_next")
        return self.execute(c.ClaimNext(named, self._session(), lease, wait, review),
                            ClaimNextOut)

    def review(self, step_id: str, verdict: str, note: str | None = None) -> StepChangeOut:
        """A reviewer's verdict on a step in review: "approve" (done) or "reject" (open
        again, `note` handed to its next claimer). Not by the session that finished the
        work, nor by another session of its key."""
        return self.execute(c.Review(step_id, self._session(), verdict, note), StepChangeOut)

    def heartbeat(self, step_id: str, lease: int | None = None) -> ClaimOut:
        """Extend the lease on a step the client holds; the fence stays."""
        return self.execute(c.Heartbeat(step_id, self._session(), lease), ClaimOut)

    def complete(self, step_id: str, fence: int | None = None, note: str | None = None,
                 evidence: Evidence | None = None, claim_next: bool = False,
                 lease: int | None = None) -> StepChangeOut:
        """Complete the step; `evidence`: the commits, change request and checks that
        show the work (ledger.domain.evidence); `note`: for whoever reads it next. The
        answer lists the steps it unblocked; with `claim_next`, the plan's next step is
        claimed for this client's session too (`next`; `lease`: its lease)."""
        return self.execute(c.Complete(step_id, self._session(), fence, note, evidence,
                                       claim_next, lease), StepChangeOut)

    def release(self, step_id: str, fence: int | None = None,
                note: str | None = None) -> StepChangeOut:
        """Give the step back, open, with a handoff `note` for the next claimer."""
        return self.execute(c.Release(step_id, self._session(), fence, note), StepChangeOut)

    def drop(self, step_id: str, fence: int | None = None,
             note: str | None = None) -> StepChangeOut:
        """Drop the step: it will not be done (steps waiting on it may go ahead)."""
        return self.execute(c.Drop(step_id, self.author, fence, note), StepChangeOut)

    def add_note(self, step_id: str, text: str) -> NoteAddedOut:
        """Leave a note on the step for whoever picks it up next."""
        return self.execute(c.AddNote(step_id, self.author, text), NoteAddedOut)

    def reopen(self, step_id: str) -> StepChangeOut:
        """Open a done or dropped step again."""
        return self.execute(c.Reopen(step_id, self.author), StepChangeOut)

    def _session(self) -> str:
        if self.actor is None:
            raise Unauthorized("this command acts for a session: pass --session ID (or "
                               "--token), or set PLANLEDGER_SESSION")
        return self.actor

    def _keep_started(self, started: SessionStartOut) -> SessionStartOut:
        if not started.replayed:  # a replayed answer's session was started by its first
            self.started.append(started)
        return started

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        """End the sessions the client started that are still live, then close. An error
        ending one is raised, unless the block is already raising its own."""
        try:
            for started in reversed(self.started):
                try:
                    self._end_started(started)
                except Exception as ending:
                    if not _already_ended(ending) and error is None:
                        raise
            self.started = []
        finally:
            self.close()


def _plan_named(plan: str | None, slug: str | None, method: str) -> str:
    """The plan a call names: `plan`, or `slug` (its old name, deprecated in 0.4.0)."""
    if slug is not None:
        if plan is not None:
            raise TypeError(f"Client.{method}() takes plan= or slug=, not both")
        warnings.warn(f"Client.{method}(slug=...) is deprecated: pass plan=... (slug= goes "
                      "in 0.5.0)", DeprecationWarning, stacklevel=3)
        return slug
    if plan is None:
        raise TypeError(f"Client.{method}() needs the plan (its slug)")
    return plan


def _already_ended(error: Exception) -> bool:
    """Whether ending a session failed because it had ended already (elsewhere)."""
    from planledger.ledger.domain.errors import SessionClosed

    if isinstance(error, SessionClosed):
        return True
    return isinstance(error, RemoteError) and error.body.get("reason") == "session_ended"


def connect(url: str | None = None, *, db: str | None = None, token: str | None = None,
            session: str | None = None, key: str | None = None) -> Client:
    """`Client(url, db=…, token=…, session=…, key=…)`, as the command line opens it."""
    return Client(url, db=db, token=token, session=session, key=key)


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

    service: "Service"

    def __init__(self, url: str | None = None, *, db: str | None = None,
                 token: str | None = None, session: str | None = None,
                 key: str | None = None, timeout: float = 30.0) -> None:
        super().__init__()
        from planledger.api.identity import Identity
        from planledger.api.runtime import open_runtime
        from planledger.api.service import Service
        from planledger.api.settings import load_settings

        settings = load_settings(db=db)
        runtime = open_runtime(settings.db, checkpoints=True)
        try:
            identity = Identity(runtime.secret, settings.admin_token)
            self.actor = identity.session_of(token) if token and not session else session
        except BaseException:
            runtime.close()
            raise
        self.service = Service(runtime, settings, identity)

    def execute(self, command: c.Command[Any], out: type[M]) -> M:
        return self.service.answer(command, out)

    @property
    def author(self) -> str:
        return self.actor or local_operator(operator_name())

    def start_session(self, name: str | None = None) -> SessionStartOut:
        # The operator holds the store's file, so its sessions are the admin's.
        started = self.service.start_session(c.StartSession(name, role="admin"))
        self.actor = self.actor or started.session_id
        return self._keep_started(started)

    def _end_started(self, started: SessionStartOut) -> None:
        self.execute(c.EndSession(started.session_id), SessionEndOut)

    def session(self, session_id: str) -> SessionOut:
        from planledger.api import reads

        return reads.session(self.service.runtime, session_id)

    def plans(self) -> list[PlanSummaryOut]:
        from planledger.api import reads

        return reads.plans(self.service.runtime)

    def _plan(self, plan: str) -> PlanOut:
        from planledger.api import reads

        return reads.plan(self.service.runtime, plan)

    def _ready(self, plan: str) -> ReadyOut:
        return self.service.ready(plan, self.actor)

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

    def __init__(self, url: str | None = None, *, db: str | None = None,
                 token: str | None = None, session: str | None = None,
                 key: str | None = None, timeout: float = 30.0) -> None:
        # `db` and `session` are the embedded store's: a server knows a session by its token.
        super().__init__()
        if not url:
            raise ValueError("a server's client needs its url (e.g. http://127.0.0.1:8765)")
        self.http = Connection(url, timeout)
        self.key = key or os.environ.get(KEY_SETTING) or None  # sent while no token is
        self._send(token or self.key)
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
            raise RemoteError(response.status, response.problem())
        try:
            return TypeAdapter(out).validate_python(response.json())
        except ValidationError:
            raise not_planledger(response.status, f"not a {out.__name__}") from None

    def start_session(self, name: str | None = None) -> SessionStartOut:
        started = self._send_request(SessionStartOut, sent(REQUESTS["session.start"](
            SimpleNamespace(session_name=name, cwd=None, source=None, model=None))))
        if self.actor is None and started.token:
            self._send(started.token)
            self.actor = started.session_id
        return self._keep_started(started)

    def _end_started(self, started: SessionStartOut) -> None:
        if started.session_id == self.actor:
            self.execute(c.EndSession(started.session_id), SessionEndOut)
            return
        acting = self.http.headers.get("Authorization")  # ended with its own token
        self._send(started.token)
        try:
            self.execute(c.EndSession(started.session_id), SessionEndOut)
        finally:
            self.http.headers.pop("Authorization", None)
            if acting is not None:
                self.http.headers["Authorization"] = acting

    def create_plan(self, plan: PlanIn | c.CreatePlan) -> PlanCreatedOut:
        """Create the plan as this client's session or key; without either, as a session
        started for it (named after the OS user) and ended straight after: the log names
        its author."""
        with self.authored(f"{operator_name()} (plan create)"):
            return super().create_plan(plan)

    @contextmanager
    def authored(self, name: str) -> Iterator[None]:
        if "Authorization" in self.http.headers:
            yield
            return
        self.start_session(name)
        try:
            yield
        finally:
            self.end_session()
            self._send(self.key)
            self.actor = None

    def session(self, session_id: str) -> SessionOut:
        return self._read(SessionOut, "session", session_id=session_id)

    def plans(self) -> list[PlanSummaryOut]:
        return self._read(list[PlanSummaryOut], "plans")

    def _plan(self, plan: str) -> PlanOut:
        return self._read(PlanOut, "plan", plan=plan)

    def _ready(self, plan: str) -> ReadyOut:
        # With a session, the listing is recorded, as on the embedded store.
        if self.actor is not None:
            return self.execute(c.ListReady(plan, self.actor), ReadyOut)
        return self._read(ReadyOut, "ready", plan=plan)

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
