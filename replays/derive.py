"""Which ledger command caused each event, and running a command again.

The log keeps events, not calls; but each event type comes from one `Ledger` command and
carries that command's arguments (a bounce is a claim that was refused). The events of one
call share its time and session and sit together in the log (one transaction), so a plan
created with its steps, or a session's end with the releases it caused, is one command.

A command rebuilt this way re-executes to the same events: where the original call left
an argument out (a fence, a heartbeat's holder check), the recorded value decides alike.
"""

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from planledger.ledger import commands as c
from planledger.ledger.application import Ledger
from planledger.ledger.domain import events as ev
from planledger.ledger.domain.evidence import Evidence
from planledger.ledger.domain.ids import local_operator
from planledger.ledger.domain.paths import PathSpec
from planledger.ledger.domain.reservations import specs
from planledger.replays.format import COMMAND_NAMES, CommandRecord, RecordingError

Args = dict[str, Any]
Start = tuple[str, str | None, Args, list[str]]  # name, acting session, args, new ids
UNRECORDED = local_operator("unrecorded")


def derive(events: Iterable[tuple[int, object]]) -> tuple[list[CommandRecord], dict[int, int]]:
    """The commands behind (position, event) pairs in log order, and each ledger event's
    command. Events of other layers (the API's riders) belong to no command."""
    commands: list[CommandRecord] = []
    of: dict[int, int] = {}
    prev: ev.LedgerEvent | None = None
    for position, event in events:
        if not isinstance(event, ev.LedgerEvent):
            continue
        if commands and prev is not None and _continues(commands[-1], prev, event):
            commands[-1] = _extend(commands[-1], event)
        else:
            name, session, args, ids = _start(event)
            commands.append(CommandRecord(len(commands) + 1, event.timestamp, session, name,
                                          args, tuple(ids)))
        of[position] = commands[-1].seq
        prev = event
    return commands, of


def _continues(last: CommandRecord, prev: ev.LedgerEvent, event: ev.LedgerEvent) -> bool:
    """Whether `event` is another event of the call that appended `prev`."""
    if (prev.timestamp, prev.session_id) != (event.timestamp, event.session_id):
        return False
    if isinstance(event, ev.StepOpened):
        return isinstance(prev, ev.StepAdded) and prev.step_id == event.originator_id
    if isinstance(event, ev.StepAdded):
        return (last.name == "create_plan"
                and isinstance(prev, ev.StepOpened | ev.PlanCreated | ev.PathsDeclared
                               | ev.StepCompleted | ev.StepNoted)
                and event.originator_id == f"plan:{last.args['slug']}")
    if _arriving(event):  # a new step done, or noted, in the write that adds it
        return (last.name in ("create_plan", "add_step")
                and isinstance(prev, ev.StepOpened | ev.PathsDeclared | ev.StepCompleted)
                and last.ids[-1] == event.originator_id)
    if isinstance(event, ev.StepCompleted) and event.reason == "last_child":
        return isinstance(prev, ev.StepCompleted | ev.StepReviewed | ev.StepNoted)
    if isinstance(event, ev.StepReopened) and event.reason == "child_reopened":
        return isinstance(prev, ev.StepReopened)  # a reopened child's done parents, up
    if isinstance(event, ev.PathsDeclared):  # a step's paths, with its addition or revision
        return (isinstance(prev, ev.StepOpened | ev.StepRevised)
                and getattr(prev, "step_id", prev.originator_id) == event.step_id)
    if isinstance(event, ev.StepNoted) and event.after is not None:  # a close's note
        return (isinstance(prev, ev.StepCompleted | ev.StepSubmitted | ev.StepReleased
                           | ev.StepDropped | ev.StepReviewed)
                and prev.originator_id == event.originator_id)
    if isinstance(event, ev.PathsReserved):  # a claim's paths, in the claim's append
        return (isinstance(prev, ev.StepClaimed | ev.LeaseRenewed)
                and prev.originator_id == event.step_id)
    ending = (last.name == "end_session" and isinstance(prev, ev.StepReleased)
              and prev.reason == "session_ended")
    if isinstance(event, ev.StepReleased) and event.reason == "session_ended":
        return ending
    return isinstance(event, ev.SessionEnded) and ending


def _arriving(event: ev.LedgerEvent) -> bool:
    """Whether the event follows a new step's StepOpened in the write that adds it."""
    return ((isinstance(event, ev.StepCompleted) and event.reason == "created")
            or (isinstance(event, ev.StepNoted) and event.after == "add"))


def _extend(command: CommandRecord, event: ev.LedgerEvent) -> CommandRecord:
    if _arriving(event):
        said = {"done": True} if isinstance(event, ev.StepCompleted) else {
            "note": event.text}  # type: ignore[attr-defined]
        return _with_last_step(command, said)
    if isinstance(event, ev.StepCompleted):  # a parent its last child closed: re-decided
        return command
    if isinstance(event, ev.StepNoted):
        return replace(command, args={**command.args, "note": event.text})
    if isinstance(event, ev.PathsDeclared | ev.PathsReserved):
        return _with_paths(command, event.paths)
    if isinstance(event, ev.SessionEnded) and event.findings:
        return replace(command, args={**command.args, "findings": event.findings})
    if isinstance(event, ev.StepAdded):
        step = {"title": event.title, "body": event.body, "depends_on": list(event.depends_on),
                **_priority(event), **_review(event), **_key(event), **_relations(event)}
        return replace(command, args={**command.args, "steps": [*command.args["steps"], step]},
                       ids=(*command.ids, event.step_id))
    return command


def _with_paths(command: CommandRecord, paths: list[dict[str, str]]) -> CommandRecord:
    """The command with the paths it declared or reserved (a plan's: its last step's)."""
    return _with_last_step(command, {"paths": list(paths)})


def _with_last_step(command: CommandRecord, args: Args) -> CommandRecord:
    """The command with more arguments: a new plan's on its last step, else its own."""
    if command.name != "create_plan":
        return replace(command, args={**command.args, **args})
    *earlier, last = command.args["steps"]
    return replace(command, args={**command.args, "steps": [*earlier, {**last, **args}]})


def _reserving(event: ev.LedgerEvent) -> Start | None:
    """Paths declared alone are a revision of only them; a path bounce is a claim."""
    who = event.session_id
    if isinstance(event, ev.PathsDeclared):
        return "revise_step", who, {"step_id": event.step_id, "title": None, "body": None,
                                    "paths": list(event.paths), "actor": _author(event)}, []
    if isinstance(event, ev.PathsBounced):
        return "claim", who, {"step_id": event.step_id, "session_id": who,
                              "lease_seconds": event.lease_seconds,
                              "paths": list(event.paths)}, []
    if isinstance(event, ev.PathsReserved):
        raise RecordingError(f"PathsReserved of step {event.step_id} without its claim")
    return None


def _start(event: ev.LedgerEvent) -> Start:
    for starter in (_structure, _claiming, _closing, _session, _reserving, _keys):
        start = starter(event)
        if start is not None:
            return start
    if isinstance(event, ev.StepOpened):
        raise RecordingError(f"StepOpened of {event.originator_id} without its StepAdded")
    raise RecordingError(f"no command is known to cause {type(event).__name__}; "
                         f"teach replays/derive.py")


def _author(event: ev.LedgerEvent) -> str:
    """Who made the write; a log from before actors were recorded may not say, and its
    commands re-execute as one stand-in operator."""
    return ev.author_of(event) or UNRECORDED


def _structure(event: ev.LedgerEvent) -> Start | None:
    who, actor = event.session_id, _author(event)
    if isinstance(event, ev.PlanCreated):
        strict = {"require_checks_pass": True} if event.require_checks_pass else {}
        strict |= {"review_required": True} if event.review_required else {}
        return "create_plan", who, {"slug": event.slug, "title": event.title, "constraints":
                                    dict(event.constraints), "steps": [], "actor": actor,
                                    **strict}, []
    if isinstance(event, ev.StepAdded):
        added = {"plan": event.originator_id.removeprefix("plan:"), "title": event.title,
                 "body": event.body, "depends_on": list(event.depends_on), "actor": actor,
                 **_priority(event), **_review(event), **_key(event), **_relations(event)}
        return "add_step", who, added, [event.step_id]
    if isinstance(event, ev.StepRevised):
        return "revise_step", who, {"step_id": event.step_id, "title": event.title,
                                    "body": event.body, "actor": actor, **_priority(event)}, []
    if isinstance(event, ev.DependenciesDeclared):
        return "declare_dependencies", who, {"step_id": event.step_id, "depends_on":
                                             list(event.depends_on), "actor": actor}, []
    return None


def _claiming(event: ev.LedgerEvent) -> Start | None:
    who = event.session_id
    if isinstance(event, ev.StepClaimed | ev.LeaseRenewed):
        return "claim", who, {"step_id": event.originator_id, "session_id": who,
                              "lease_seconds": event.lease_seconds}, []
    if isinstance(event, ev.ReviewClaimed):
        return "claim", who, {"step_id": event.originator_id, "session_id": who,
                              "lease_seconds": event.lease_seconds, "review": True}, []
    if isinstance(event, ev.ReviewRefused):
        return "review", who, {"step_id": event.step_id, "session_id": who,
                               "verdict": "approve"}, []
    if isinstance(event, ev.ClaimBounced | ev.ClaimRefused):
        return "claim", who, {"step_id": event.step_id, "session_id": who,
                              "lease_seconds": event.lease_seconds}, []
    if isinstance(event, ev.ReadyListed):
        return "list_ready", who, {"plan": event.plan, "session_id": who}, []
    return None


def _closing(event: ev.LedgerEvent) -> Start | None:
    who, step = event.session_id, event.originator_id
    if isinstance(event, ev.StepReviewed):
        return "review", who, {"step_id": step, "session_id": who,
                               "verdict": event.verdict}, []
    if isinstance(event, ev.StepCompleted | ev.StepSubmitted):
        shown = {"evidence": event.evidence} if event.evidence is not None else {}
        return "complete", who, {"step_id": step, "session_id": who, "fence": event.fence,
                                 **shown}, []
    if isinstance(event, ev.StepDropped):
        return "drop", who, {"step_id": step, "actor": _author(event), "fence": event.fence}, []
    if isinstance(event, ev.StaleFenceRejected):
        held = "actor" if event.action == "drop" else "session_id"
        return event.action, who, {"step_id": event.step_id, held: who, "fence": event.fence}, []
    if isinstance(event, ev.StepReleased) and event.reason in ev.HOLDER_RELEASES:
        said = {"reason": event.reason} if event.reason != "released" else {}
        return "release", who, {"step_id": step, "session_id": who, "fence": event.fence,
                                **said}, []
    if isinstance(event, ev.StepReleased) and event.reason == "forced":
        return "force_release", who, {"step_id": step, "actor": _author(event)}, []
    if isinstance(event, ev.StepReopened):
        return "reopen", who, {"step_id": step, "actor": _author(event)}, []
    if isinstance(event, ev.StepNoted):
        return "note", who, {"step_id": step, "actor": _author(event), "text": event.text}, []
    return None


def _session(event: ev.LedgerEvent) -> Start | None:
    if isinstance(event, ev.SessionStarted):
        sid = event.originator_id
        said = {k: v for k, v in (("cwd", event.cwd), ("source", event.source),
                                  ("model", event.model)) if v is not None}
        said |= {k: v for k, v in (("key", event.key), ("role", event.role)) if v is not None}
        return "start_session", sid, {"name": event.name, **said}, [sid]
    if isinstance(event, ev.SessionEnded | ev.StepReleased):  # a release: the end's first
        who = event.session_id
        findings = event.findings if isinstance(event, ev.SessionEnded) else None
        return "end_session", who, {"session_id": who,
                                    **({"findings": findings} if findings else {})}, []
    return None


def _keys(event: ev.LedgerEvent) -> Start | None:
    """A key's issue and revocation (its digest only: a recording never holds a key)."""
    if isinstance(event, ev.KeyIssued):
        return "issue_key", None, {"name": event.name, "role": event.role,
                                   "digest": event.digest, "actor": _author(event)}, []
    if isinstance(event, ev.KeyRevoked):
        return "revoke_key", None, {"name": event.name, "actor": _author(event)}, []
    return None


# --- running a command again ------------------------------------------------------


def _actor(a: Args) -> str:
    """The recorded author; recordings from before authors were recorded name none (or,
    for a drop, only its session)."""
    return str(a.get("actor") or a.get("session_id") or UNRECORDED)


def _holder_release(a: Args) -> ev.HolderRelease:
    """A recorded release's reason (a file is untrusted: a reason no holder gives is refused)."""
    reason = a.get("reason", "released")
    for known in ev.HOLDER_RELEASES:
        if reason == known:
            return known
    raise RecordingError(f"a release's reason is {str(reason)[:40]!r}: one of "
                         f"{', '.join(ev.HOLDER_RELEASES)} was expected")


def _paths(a: Args) -> tuple[PathSpec, ...]:
    return specs(a.get("paths") or [])


def _priority(event: ev.StepAdded | ev.StepRevised) -> Args:
    """A step's priority, when the event set one (recordings before priorities: none)."""
    return {} if event.priority is None else {"priority": event.priority}


def _review(event: ev.StepAdded) -> Args:
    """A step's review setting, when the event set one (recordings before reviews: none)."""
    return {"review_required": True} if event.review_required else {}


def _key(event: ev.StepAdded) -> Args:
    """A step's key within its plan, when it has one (recordings before keys: none)."""
    return {} if event.key is None else {"key": event.key}


def _relations(event: ev.StepAdded) -> Args:
    """A step's relations (ledger.domain.relations), those it has (recordings before
    relations: none)."""
    found: Args = {name: value for name in ("parent", "discovered_from", "labels", "links")
                   if (value := getattr(event, name)) is not None}
    return found


def _arrival(a: Args) -> Args:
    """A new step's relations and arrival, as NewStep and AddStep take them (a file is
    untrusted: the ledger checks them again as it re-executes)."""
    links = a.get("links") or []
    if not isinstance(links, list) or not all(isinstance(k, dict) for k in links):
        raise RecordingError("a step's links are a list of {kind, target}")
    return {"parent": a.get("parent"), "discovered_from": a.get("discovered_from"),
            "labels": tuple(a.get("labels") or ()),
            "links": tuple(c.Link(str(k.get("kind")), str(k.get("target"))) for k in links),
            "done": a.get("done") is True, "note": a.get("note")}


def _create_plan(a: Args) -> c.CreatePlan:
    steps = tuple(c.NewStep(s["title"], s["body"], tuple(s["depends_on"]), s.get("key"),
                            paths=_paths(s), priority=s.get("priority"),
                            review_required=s.get("review_required") is True, **_arrival(s))
                  for s in a["steps"])
    return c.CreatePlan(a["slug"], a["title"], _actor(a), tuple(a["constraints"].items()),
                        steps, a.get("require_checks_pass") is True,
                        a.get("review_required") is True)


def _evidence(a: Args) -> Evidence | None:
    """A completion's recorded evidence (a file is untrusted: the ledger checks it again
    as it re-executes)."""
    recorded = a.get("evidence")
    return None if recorded is None else Evidence.of_record(recorded)


Build = Callable[[Args], c.Command[Any]]
# Each recorded command's name: the arguments it must carry, and its command value.
BUILDERS: dict[str, tuple[tuple[str, ...], Build]] = {
    "start_session": (("name",), lambda a: c.StartSession(
        a["name"], cwd=a.get("cwd"), source=a.get("source"), model=a.get("model"),
        key=a.get("key"), role=a.get("role"))),
    "end_session": (("session_id",), lambda a: c.EndSession(a["session_id"],
                                                            a.get("findings"))),
    "create_plan": (("slug", "title", "constraints", "steps"), _create_plan),
    "add_step": (("plan", "title", "body", "depends_on"), lambda a: c.AddStep(
        a["plan"], a["title"], _actor(a), a["body"], tuple(a["depends_on"]), _paths(a),
        a.get("priority"), a.get("review_required") is True, a.get("key"), **_arrival(a))),
    "revise_step": (("step_id", "title", "body"), lambda a: c.ReviseStep(
        a["step_id"], _actor(a), a["title"], a["body"],
        _paths(a) if a.get("paths") is not None else None, a.get("priority"))),
    "declare_dependencies": (("step_id", "depends_on"), lambda a: c.DeclareDependencies(
        a["step_id"], tuple(a["depends_on"]), _actor(a))),
    "list_ready": (("plan", "session_id"), lambda a: c.ListReady(a["plan"], a["session_id"])),
    "claim": (("step_id", "session_id", "lease_seconds"), lambda a: c.Claim(
        a["step_id"], a["session_id"], a["lease_seconds"], _paths(a),
        a.get("review") is True)),
    "review": (("step_id", "session_id", "verdict"), lambda a: c.Review(
        a["step_id"], a["session_id"], a["verdict"], a.get("note"))),
    "complete": (("step_id", "session_id", "fence"), lambda a: c.Complete(
        a["step_id"], a["session_id"], a["fence"], a.get("note"), _evidence(a))),
    "release": (("step_id", "session_id", "fence"), lambda a: c.Release(
        a["step_id"], a["session_id"], a["fence"], a.get("note"), _holder_release(a))),
    "drop": (("step_id", "fence"), lambda a: c.Drop(a["step_id"], _actor(a), a["fence"],
                                                    a.get("note"))),
    "force_release": (("step_id",), lambda a: c.ForceRelease(a["step_id"], _actor(a))),
    "reopen": (("step_id",), lambda a: c.Reopen(a["step_id"], _actor(a))),
    "note": (("step_id", "text"), lambda a: c.AddNote(a["step_id"], _actor(a), a["text"])),
    "issue_key": (("name", "role", "digest"), lambda a: c.IssueKey(
        a["name"], a["role"], a["digest"], _actor(a))),
    "revoke_key": (("name",), lambda a: c.RevokeKey(a["name"], _actor(a))),
}
assert frozenset(BUILDERS) == COMMAND_NAMES, "the format's command names and the builders"


def command_of(record: CommandRecord) -> c.Command[Any]:
    """The command value a recorded command stands for."""
    needed, build = BUILDERS[record.name]
    missing = [k for k in needed if k not in record.args]
    if missing:
        raise RecordingError(f"command {record.seq} ({record.name}) lacks "
                             f"{', '.join(missing)}")
    return build(record.args)


def execute(ledger: Ledger, command: CommandRecord) -> None:
    """Run the recorded command again through its handler; a refusal raises its
    LedgerError."""
    ledger.execute(command_of(command))
