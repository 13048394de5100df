"""Readable output for people: tables and one-line answers.

Each renderer reads an answer as a dict of its fields. On the embedded store the dict is
the schema's `model_dump()`, or the same fields built without the schema
(api.plain_answers). On a call to a server it is the server's JSON as it comes
(api.cli.calls does not load the schemas). A moment is a datetime in the first case and
ISO text in the second; both print the same.
"""

from datetime import datetime
from typing import Any

from planledger.api.cli import output

Fields = dict[str, Any]


def _moment(value: datetime | str) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _when(value: datetime | str | None) -> str:
    return _moment(value).strftime("%Y-%m-%d %H:%M:%S") if value else ""


def named(session_id: str, name: str | None) -> str:
    """A session as people read it: its name beside its id (the id whole, to copy)."""
    return f"{name} ({session_id})" if name else session_id


def _state(step: Fields) -> tuple[str, str]:
    """A step's status and who holds it or what it waits on."""
    collisions = step.get("collides_with") or []
    if step["claimable"] and collisions:
        held = "; ".join(f"{named(c['holder'], c['holder_name'])} holds "
                         f"{', '.join(c['patterns'])}" for c in collisions)
        return "paths held", held  # a claim now would bounce
    status = "claimable" if step["claimable"] else step["status"]
    if step["status"] == "in_review":
        reviewing = f"; reviewer {step['reviewer']}" if step.get("reviewer") else ""
        return status, f"author {step.get('author') or '?'}{reviewing}"
    if step["holder"]:
        return status, named(step["holder"], step.get("holder_name"))
    if step["lapsed_holder"]:
        return status, f"lapsed: {step['lapsed_holder']}"
    rollup = f" ({step['children']})" if step.get("children") else ""
    if step["blockers"]:
        return status, "waits on " + ", ".join(f'{ref(b)} "{b["title"]}"'
                                               for b in step["blockers"]) + rollup
    return status, rollup.strip(" ()")


def relations(step: Fields) -> list[str]:
    """A step's relations (ledger.domain.relations), a line each, by reference."""
    lines = []
    if step.get("parent"):
        lines.append(f"parent: {step.get('parent_ref') or step['parent']}")
    if step.get("children"):
        lines.append(f"children: {step['children']}")
    if step.get("discovered_from"):
        lines.append("discovered while working on "
                     f"{step.get('discovered_from_ref') or step['discovered_from']}")
    if step.get("labels"):
        lines.append("labels: " + ", ".join(step["labels"]))
    for link in step.get("links") or ():
        lines.append(f"{link['kind']}: {link['target']}")
    return lines


def ref(step: Fields) -> str:
    """How a table names a step: its reference (`plan#5`), which every command takes;
    its whole id from a server that answers no reference."""
    return str(step.get("ref") or step["step_id"])


def steps_table(title: str, steps: list[Fields]) -> None:
    keyed = any(s.get("key") for s in steps)
    rows = [(ref(s), *((s.get("key") or "",) if keyed else ()), *_state(s),
             str(s["fence"] or ""), s["title"]) for s in steps]
    # Only the title (last) is cut to fit: references and ids stay whole, to copy into the
    # next command (ids differ in their last characters only, so a cut one names nothing).
    columns = ("step", *(("key",) if keyed else ()), "status", "holder / blockers", "fence",
               "title")
    output.table(columns, rows, title, cut=(len(columns) - 1,))


def plans(found: list[Fields]) -> None:
    if not found:
        output.line("no plans yet: create one with `planledger plan create FILE`")
        return
    output.table(("plan", "progress", "title"),
                 [(p["slug"], p["progress"]["line"], p["title"]) for p in found], cut=(2,))


def plan(shown: Fields) -> None:
    output.line(f"{shown['slug']}: {shown['title']} — "
                f"{shown['progress']['line']}")
    for name, rule in shown["constraints"].items():
        output.line(f"  constraint {name}: {rule}")
    steps_table("steps", shown["steps"])


def created(made: Fields) -> None:
    output.line(f"created plan {made['slug']} with {len(made['steps'])} steps")
    refs = {s["step_id"]: ref(s) for s in made["steps"]}
    output.table(("step", "key", "id", "depends on", "title"),
                 [(ref(s), s["key"] or "", s["step_id"],
                   ", ".join(refs.get(d, d) for d in s["depends_on"]), s["title"])
                  for s in made["steps"]], cut=(4,))
    warn(made)


def warn(answer: Fields) -> None:
    """The answer's warnings (a path pattern that reserves the whole repository), each on
    its own line on stderr: the write went through, and the person should look."""
    for said in answer.get("warnings") or []:
        output.line(f"warning: {said}", stderr=True)


def ready(shown: Fields) -> None:
    if not shown["ready"]:
        output.line(f"nothing ready in {shown['plan']}")
    else:
        steps_table(f"ready in {shown['plan']}", shown["ready"])
    if shown["held"]:
        steps_table("held", shown["held"])
    if shown["blocked"]:
        steps_table("blocked", shown["blocked"])
    if shown.get("in_review"):
        steps_table("in review (claim-next --review takes one)", shown["in_review"])


def step(shown: Fields) -> None:
    steps_table(f"step of {shown['plan']}", [shown])
    for line in relations(shown):
        output.line(line)
    if shown["body"]:
        for text in shown["body"].splitlines():
            output.line(text)
    rows = []
    for e in shown["history"]:
        detail = ", ".join(f"{k}={v}" for k, v in e["data"].items()
                           if k not in ("body", "evidence"))
        if e["data"].get("evidence"):
            detail += ", with evidence (below)"
        if e["type"] == "StepNoted":
            detail = _note_line(e["data"]["text"], e["data"].get("after"))
        elif e["type"] == "StepAdded" and relations(shown):
            detail = "; ".join(line for line in relations(shown)
                               if not line.startswith("children"))
        elif e["type"] == "StepCompleted" and e["data"].get("reason"):
            detail = CLOSED_BY.get(e["data"]["reason"], detail)
        rows.append((_when(e["at"]), e["type"], e["session_id"] or "", detail))
    output.table(("at", "event", "session", "detail"), rows, "history", cut=(3,))
    for e in shown["history"]:
        if e["data"].get("evidence"):
            _evidence(e)
    notes = [e for e in shown["history"] if e["type"] == "StepNoted"]
    if notes:  # whole, below the table: a cell shows a note's start only
        output.line("notes:")
        for e in notes:
            _note(e["at"], e["actor"] or e["session_id"], e["data"]["text"],
                  e["data"].get("after"))


# Why a step closed with no claim (ledger.domain.events.ClosedBy), as its history says it.
CLOSED_BY = {"last_child": "closed: its last child finished", "created": "arrived done"}


def _note_line(text: str, after: str | None) -> str:
    """A note in one cell: the close it came with, then its text."""
    return f"note{f' (with the {after})' if after else ''}: {text}"


def _note(at: datetime | str, by: str | None, text: str, after: str | None) -> None:
    """A note whole: when and by whom, then each of its lines, indented."""
    output.line(f"  {_when(at)} {by or 'unknown'}{f' (with the {after})' if after else ''}:")
    for text_line in text.splitlines() or [""]:
        output.line(f"    {text_line}")


def _evidence(event: Fields) -> None:
    """A completion's evidence, whole: every sha, the change request, each check."""
    from planledger.ledger.domain.errors import InvalidInput
    from planledger.ledger.domain.evidence import Evidence, check_evidence

    try:
        said = check_evidence(Evidence.of_record(event["data"]["evidence"]))
    except InvalidInput:
        said = None
    output.line(f"evidence of the completion at {_when(event['at'])}:")
    if said is None:
        output.line("  (none that reads as evidence)")
        return
    if said.commits:
        on = f" on {said.branch}" if said.branch else ""
        output.line(f"  commits{on}: {', '.join(said.commits)}")
    elif said.branch:
        output.line(f"  branch: {said.branch}")
    if said.pr:
        output.line(f"  change request: {said.pr}")
    for check in said.checks:
        summary = f": {check.summary.splitlines()[0]}" if check.summary else ""
        command = f" ({check.command.splitlines()[0]})" if check.command else ""
        output.line(f"  check {check.name}{command}: {check.result}{summary}")


def claim(granted: Fields) -> None:
    verb = ("renewed" if granted["renewed"] else
            "took to review" if granted.get("status") == "in_review" else "claimed")
    output.line(f'{verb} {ref(granted)} "{granted["title"]}" — fence '
                f"{granted['fence']}, lease until {_when(granted['expires_at'])}")
    if granted["took_over_from"]:
        output.line(f"  (took over from lapsed holder {granted['took_over_from']})")
    if granted["paths"]:
        reserved = ", ".join(p["pattern"] + (" (shared)" if p["mode"] == "shared" else "")
                             for p in granted["paths"])
        output.line(f"  reserved: {reserved}")
    warn(granted)
    if granted["notes"]:
        output.line("notes left since the step was last claimed:")
        for note in granted["notes"]:
            _note(note["at"], note["by"], note["text"], note.get("after"))
    if granted["notes_left_out"]:
        output.line(f"  and {granted['notes_left_out']} older note(s): `planledger step "
                    f"{granted['step_id']}` shows every one")


def claim_next(answer: Fields) -> None:
    if answer["claimed"]:
        claim(answer["claimed"])
    else:
        output.line(answer["message"])


def change(changed: Fields) -> None:
    output.line(f"{ref(changed)}: {changed['status']}")
    if changed.get("unblocked"):
        output.line(f"  unblocked: {', '.join(changed['unblocked'])}")
    if changed.get("next"):
        claim_next(changed["next"])


def session_started(started: Fields) -> None:
    output.line(f"session {started['session_id']} started"
                + (f" ({started['name']})" if started["name"] else ""))
    # Plain lines, never wrapped, so `eval "$(… | grep export)"` works in any terminal.
    output.echo("act for it with:")
    output.echo(f"  export PLANLEDGER_SESSION={started['session_id']}")
    output.echo(f"  export PLANLEDGER_TOKEN={started['token']}")


def session_ended(ended: Fields) -> None:
    output.line(f"session {ended['session_id']} ended; released {len(ended['released'])} "
                "step(s)")


def session(shown: Fields) -> None:
    state = "ended" if shown["ended"] else "live"
    output.line(f"session {shown['session_id']} ({shown['name'] or 'unnamed'}), {state}, "
                f"started {_when(shown['started_at'])}")
    for h in shown["holds"]:
        output.line(f'  holds {h["step_id"]} "{h["title"]}" fence {h["fence"]}, '
                    f"{int(h['seconds_left'] or 0)} s left")


def step_added(added: Fields) -> None:
    """A step added: its reference and id, then its relations."""
    output.line(f'added {ref(added)} "{added["title"]}" ({added["step_id"]})')
    for line in relations(added):
        output.line(f"  {line}")


def note_added(added: Fields) -> None:
    output.line(f"noted on step {ref(added)}")


def log(page: Fields) -> None:
    output.table(("position", "at", "event", "stream", "session"),
                 [(str(e["position"]), _when(e["at"]), e["type"], e["stream"],
                   e["session_id"] or "") for e in page["events"]])
    if page["more"]:
        output.line(f"more: --after {page['next_after']}")


def paths_found(found: Fields) -> None:
    if not found["reserved"]:
        output.line(found["message"])
    for held in found["reserved"]:
        who = named(held["holder"], held["holder_name"])
        met = ", ".join(held["patterns"])
        until = _moment(held["expires_at"])
        output.line(f'{met}: held by {who}, step {ref(held)} "{held["title"]}", fence '
                    f"{held['fence']}, until {until.isoformat()}")


def timeline(shown: Any) -> None:
    """Render the merged timeline for a terminal (api.timeline_render).

    The replays use the same renderer. It takes the API's schema (TimelineOut itself, not
    its dict). It is imported here, not at the top, because it is heavy and no other
    command needs it."""
    from planledger.api import timeline_render
    from planledger.projections.timeline import Timeline

    timeline_render.terminal(Timeline(tuple(shown.lanes), tuple(shown.entries),
                                      tuple(shown.progress)))
