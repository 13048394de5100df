"""beads' (`bd`) JSONL export, `.beads/issues.jsonl`, read into steps and written back.

One JSON object a line, one issue each, as beads writes them:

    {"id":"bd-a1b2","title":"Rotate tokens","description":"…","status":"in_progress",
     "priority":1,"issue_type":"task","assignee":"alice","labels":["auth"],
     "created_at":"2026-01-02T10:00:00Z","updated_at":"…",
     "dependencies":[{"issue_id":"bd-a1b2","depends_on_id":"bd-c3d4","type":"blocks"}]}

How an issue becomes a step:
- `id` is the step's key (`plan/bd-a1b2`, or `bd-a1b2` alone where no other plan has it);
  `title` its title; `description` its body, with `design`, `acceptance_criteria` and
  `notes` added under their own headings; `priority` kept (0-4, or `P0`..`P4`); `labels`
  kept.
- dependencies (`issue_id` depends on `depends_on_id`): `blocks` is a dependency,
  `parent-child` the step's parent, `discovered-from` the step it was found from; any other
  type (`related`, `waits-for`, …) is kept as a link of that kind. A second parent is
  refused, naming the issue (a step has one parent); a second origin is kept as a link,
  and so is a dependency on another project's issue (`external:<project>:<capability>`),
  which this plan cannot wait on.
- `closed` arrives done; closed with `close_reason` "dropped" (how a dropped step is
  written back) arrives done with the label `dropped`, since a step cannot arrive
  dropped; a closed parent with open children arrives open, with a note saying so;
  `in_progress` (and `hooked`) arrives open with a note naming who held it in beads
  (`assignee`); `tombstone` (a deleted issue) is left out, and so are
  the dependencies on it, both counted. Any other status arrives open; one that is not
  `open` or `blocked` (blocked is derived here) is said in the note.

Written back (`write_beads`), each step is an issue with the same fields where both hold
them, in the plan's order (`plan#N`, so an import of the file numbers the steps alike):
id, title, description, status (`closed` for done and dropped, with `close_reason` "done"
or "dropped"; `in_progress` for a held step), priority, labels and dependencies; a step
with children is an `epic`, any other a `task`. A step without a key is written as
`<plan>-<number>`. An issue that was `in_progress` in beads comes back `open`: here a
claim is a live session's, and who held it in beads is in the step's note.
"""

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from planledger.api.imports.steps import (
    Imported,
    ImportedStep,
    checked,
    json_kind,
    json_object,
    refuse,
    strip_bom,
)
from planledger.api.schemas import PlanOut, StepOut

SOURCE = "beads file"
MAX_LINE_BYTES = 1_000_000  # one issue; beads bounds a description well below this
EXTRA_TEXTS = (("design", "Design"), ("acceptance_criteria", "Acceptance criteria"),
               ("notes", "Notes"))
HELD = ("in_progress", "hooked")  # someone is on it in beads
OPEN = ("open", "blocked")  # blocked is derived from dependencies: no need to say it
PARENT, ORIGIN, BLOCKS = "parent-child", "discovered-from", "blocks"
DROPPED = "dropped"  # a close_reason (as `write_beads` writes a dropped step) and a label
EXTERNAL = "external:"  # beads' cross-project dependency: `external:<project>:<capability>`


def read_beads(data: bytes) -> Imported:
    """Every issue of a beads export, as steps in the file's order (`steps.ordered` puts
    them in an order to create them in); InvalidInput naming the line and why."""
    issues: list[tuple[int, dict[str, Any]]] = []
    skipped: dict[str, int] = {}
    for number, raw in enumerate(strip_bom(data).split(b"\n"), start=1):
        if not raw.strip():
            continue
        record = _record(number, raw)
        kind = record.get("_type", "issue")
        if kind != "issue":  # newer exports may carry other records beside the issues
            skipped[f"{str(kind)[:40]} record"] = skipped.get(f"{str(kind)[:40]} record",
                                                               0) + 1
            continue
        issues.append((number, record))
    deleted = {str(r.get("id")) for _, r in issues if _is_deleted(r)}
    steps = []
    for number, record in issues:
        if _is_deleted(record):
            skipped["deleted issue"] = skipped.get("deleted issue", 0) + 1
            continue
        step, dropped = _step(number, record, deleted)
        if dropped:
            skipped["dependency on a deleted issue"] = (
                skipped.get("dependency on a deleted issue", 0) + dropped)
        steps.append(checked(SOURCE, step))
    return Imported(tuple(steps), skipped)


def _record(number: int, raw: bytes) -> dict[str, Any]:
    return json_object(SOURCE, f"line {number}", raw, MAX_LINE_BYTES, "issue")


def _is_deleted(record: Mapping[str, Any]) -> bool:
    return record.get("status") == "tombstone" or bool(record.get("deleted_at"))


def _step(number: int, record: Mapping[str, Any],
          deleted: set[str]) -> tuple[ImportedStep, int]:
    """The issue on line `number` as a step, and how many of its dependencies were on a
    deleted issue (left out)."""
    where = f"line {number}"
    key = _text(where, record, "id", required=True)
    status = _text(where, record, "status") or "open"
    relations = _relations(where, key, record.get("dependencies"), deleted)
    labels = _labels(where, record.get("labels"))
    if status == "closed" and record.get("close_reason") == DROPPED:
        labels = tuple(dict.fromkeys((*labels, DROPPED)))
    return ImportedStep(
        key=key, title=_text(where, record, "title", required=True), where=where,
        body=_body(where, record), priority=_priority(where, record.get("priority")),
        depends_on=relations.depends_on, parent=relations.parent,
        discovered_from=relations.discovered_from,
        labels=labels, links=relations.links,
        done=status == "closed", note=_note(status, _text(where, record, "assignee")),
    ), relations.dropped


def _text(where: str, record: Mapping[str, Any], name: str, *, required: bool = False
          ) -> str:
    value = record.get(name)
    if value is None or value == "":
        if required:
            raise refuse(SOURCE, where, f"has no {name}")
        return ""
    if not isinstance(value, str):
        raise refuse(SOURCE, where, f"{name} is {json_kind(value)}, not text")
    return value


def _body(where: str, record: Mapping[str, Any]) -> str:
    parts = [_text(where, record, "description")]
    for name, heading in EXTRA_TEXTS:
        if text := _text(where, record, name):
            parts.append(f"## {heading}\n\n{text}")
    return "\n\n".join(p for p in parts if p)


def _priority(where: str, value: Any) -> int | None:
    """0-4 as beads writes it, or `P0`..`P4` as people do; absent: the ledger's default."""
    if value is None:
        return None
    if isinstance(value, str) and value.upper().removeprefix("P").isdigit():
        value = int(value.upper().removeprefix("P"))
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 4:
        raise refuse(SOURCE, where, f"priority {str(value)[:20]!r} is not 0..4 (or P0..P4)")
    return value


def _labels(where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise refuse(SOURCE, where, "labels is not a list of texts")
    return tuple(dict.fromkeys(value))


def _note(status: str, assignee: str) -> str | None:
    if status in HELD:
        who = f'"{assignee}"' if assignee else "nobody named"
        return f"{status} in beads, held by {who}: ask before taking it over"
    if status not in (*OPEN, "closed"):
        return f'"{status[:40]}" in beads'
    return None


class _Relations:
    """An issue's dependencies, sorted into what a step holds."""

    def __init__(self) -> None:
        self.depends_on: tuple[str, ...] = ()
        self.parent: str | None = None
        self.discovered_from: str | None = None
        self.links: tuple[tuple[str, str], ...] = ()
        self.dropped = 0

    def add(self, kind: str, target: str) -> None:
        if target.startswith(EXTERNAL):  # another project's: kept, never resolved here
            if (kind, target) not in self.links:
                self.links += ((kind, target),)
        elif kind == BLOCKS:
            if target not in self.depends_on:
                self.depends_on += (target,)
        elif kind == PARENT:
            self.parent = target
        elif kind == ORIGIN and self.discovered_from is None:
            self.discovered_from = target
        elif (kind, target) not in self.links:
            self.links += ((kind, target),)


def _relations(where: str, key: str, value: Any, deleted: set[str]) -> _Relations:
    relations = _Relations()
    if value is None:
        return relations
    if not isinstance(value, list):
        raise refuse(SOURCE, where, "dependencies is not a list")
    for index, dependency in enumerate(value, start=1):
        at = f"{where}, dependency {index}"
        if not isinstance(dependency, dict):
            raise refuse(SOURCE, at, "is not an object")
        issue = _text(at, dependency, "issue_id") or key
        if issue != key:
            raise refuse(SOURCE, at, f"is of {issue[:64]!r}, not of {key!r}, the issue it "
                                     "is listed under")
        target = _text(at, dependency, "depends_on_id", required=True)
        # beads writes `type`; some of its ports write `dep_type`. Untyped: it blocks.
        kind = (_text(at, dependency, "type") or _text(at, dependency, "dep_type")
                or BLOCKS)
        if target in deleted:
            relations.dropped += 1
        elif target == key:
            raise refuse(SOURCE, at, f"makes {key!r} depend on itself")
        elif kind == PARENT and relations.parent not in (None, target):
            raise refuse(SOURCE, at, f"gives {key!r} a second parent, {target[:64]!r} (the "
                                     f"first is {relations.parent!r}); a step has one parent")
        else:
            relations.add(kind[:50], target)
    return relations


# --- written back ------------------------------------------------------------------------


def write_beads(plan: PlanOut) -> str:
    """The plan as a beads export: one issue a line, in the plan's order (beads sorts by
    id; the plan's order is what keeps each step's number when the file is imported)."""
    ids = {step.step_id: issue_id(plan.slug, step) for step in plan.steps}
    issues = [_issue(plan, step, ids)
              for step in sorted(plan.steps, key=lambda step: step.position)]
    return "".join(json.dumps(issue, ensure_ascii=False, separators=(",", ":")) + "\n"
                   for issue in issues)


def issue_id(slug: str, step: StepOut) -> str:
    """The beads id a step is written as: its key, else `<plan>-<number>` (`plan#N`'s N)."""
    return step.key or f"{slug}-{step.position + 1}"  # `position` counts from 0


def _issue(plan: PlanOut, step: StepOut, ids: Mapping[str, str]) -> dict[str, Any]:
    me = ids[step.step_id]
    status = {"done": "closed", "dropped": "closed", "in_progress": "in_progress",
              "in_review": "in_progress"}.get(step.status, "open")
    stamp = _stamp(plan.created_at)
    issue: dict[str, Any] = {"id": me, "title": step.title}
    if step.body:
        issue["description"] = step.body
    # A step with children is what beads calls an epic; beads' other types are not held.
    issue |= {"status": status, "priority": step.priority,
              "issue_type": "epic" if step.children else "task"}
    if step.holder_name and status == "in_progress":
        issue["assignee"] = step.holder_name
    issue |= {"created_at": stamp, "updated_at": stamp}
    if status == "closed":
        issue["closed_at"] = stamp
        issue["close_reason"] = step.status
    if step.labels:
        issue["labels"] = list(step.labels)
    dependencies = [{"issue_id": me, "depends_on_id": ids.get(target, target), "type": kind}
                    for kind, target in _edges(step)]
    if dependencies:
        issue["dependencies"] = dependencies
    return issue


def _edges(step: StepOut) -> list[tuple[str, str]]:
    """The step's relations as beads' dependency types, each to a step id (or, for a
    link, the text it was given)."""
    edges = [(BLOCKS, d) for d in step.depends_on]
    edges += [(kind, target) for kind, target in ((PARENT, step.parent),
                                                  (ORIGIN, step.discovered_from)) if target]
    return edges + [(link.kind, link.target) for link in step.links]


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
