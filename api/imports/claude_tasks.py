"""A Claude Code task list (`~/.claude/tasks/<list>/`), read into steps.

Claude Code keeps one JSON file a task (`1.json`, `2.json`, …), written by its
TaskCreate and TaskUpdate tools:

    {"id": "2", "subject": "Add the refresh endpoint", "description": "…",
     "activeForm": "Adding the refresh endpoint", "status": "in_progress",
     "blocks": ["3"], "blockedBy": ["1"], "owner": "agent-a", "metadata": {}}

Its makers do not document the format, so it is read defensively:
- a task is the step keyed `task-<id>` (`plan/task-2`: a key never mistaken for the
  step's number in the plan, `plan#2`); `subject` its title, `description` its body;
- `blockedBy` and `blocks` both become dependencies (`blocks: ["3"]` on task 2 makes
  task 3 wait on task 2); a task naming itself in either is refused, naming it;
- `metadata.priority`, if set, is the step's priority: 0 (highest) .. 4, `P0`..`P4`, or
  urgent/critical (0), high (1), medium/normal (2), low (3), lowest (4); any other value
  is refused, naming the file;
- `completed` arrives done, `in_progress` open with a note naming its `owner`, `pending`
  open; a `deleted` task is left out, and so are the dependencies on it;
- every other field (`activeForm`, `owner`, `metadata`, fields added later) is kept, as
  JSON, in a last paragraph of the body, so nothing the file said is lost;
- files that are not `<name>.json` (the list's `.lock`, `.highwatermark`) are left out
  and counted, and so are symbolic links (never followed: one may lead anywhere). A
  UTF-8 byte order mark at the start of a file is skipped. A file that is not a task
  (not JSON, not an object, no subject) refuses the whole import, naming the file.
"""

import json
from collections.abc import Mapping, Sequence
from typing import Any

from planledger.api.imports.steps import (
    Imported,
    ImportedStep,
    checked,
    json_object,
    refuse,
)

SOURCE = "Claude Code task list"
MAX_FILE_BYTES = 1_000_000  # one task
KNOWN = frozenset({"id", "subject", "description", "status", "blocks", "blockedBy"})
STATUSES = {"pending": "open", "in_progress": "open", "completed": "done"}
# `metadata.priority` as people write it: a step's 0 (highest) .. 4, P0..P4, or a word.
PRIORITY_WORDS = {"urgent": 0, "critical": 0, "high": 1, "medium": 2, "normal": 2,
                  "low": 3, "lowest": 4}
KEY_PREFIX = "task-"


def read_task_list(files: Sequence[tuple[str, bytes]]) -> Imported:
    """The tasks of a list (`files`: each file's name and content, in any order), as
    steps in the order of their ids; InvalidInput naming the file and why."""
    skipped: dict[str, int] = {}
    tasks: list[tuple[str, dict[str, Any]]] = []
    for name, data in files:
        if not name.endswith(".json") or name.startswith("."):
            skipped["file that is not a task"] = skipped.get("file that is not a task",
                                                             0) + 1
            continue
        tasks.append((name, _task(name, data)))
    tasks.sort(key=lambda task: _order(str(task[1].get("id", ""))))
    deleted = {_id(name, task) for name, task in tasks if task.get("status") == "deleted"}
    waits: dict[str, list[str]] = {}
    for name, task in tasks:
        me = _id(name, task)
        for field in ("blockedBy", "blocks"):
            if me in _ids(name, task, field):
                raise refuse(SOURCE, f"file {name}", f"task {me[:64]!r} lists itself in "
                                                     f"{field}: a task cannot wait on itself")
        for before in _ids(name, task, "blockedBy"):
            waits.setdefault(me, []).append(before)
        for after in _ids(name, task, "blocks"):
            waits.setdefault(after, []).append(me)
    steps = []
    for name, task in tasks:
        me = _id(name, task)
        if me in deleted:
            skipped["deleted task"] = skipped.get("deleted task", 0) + 1
            continue
        waited = list(dict.fromkeys(waits.get(me, ())))
        if dropped := sum(1 for b in waited if b in deleted):
            skipped["dependency on a deleted task"] = (
                skipped.get("dependency on a deleted task", 0) + dropped)
        steps.append(checked(SOURCE, _step(name, task, [b for b in waited
                                                        if b not in deleted])))
    return Imported(tuple(steps), skipped)


def _task(name: str, data: bytes) -> dict[str, Any]:
    return json_object(SOURCE, f"file {name}", data, MAX_FILE_BYTES, "task")


def _id(name: str, task: Mapping[str, Any]) -> str:
    """The task's id: its `id` field, else its file's name (`4.json` is task 4)."""
    value = task.get("id", name.removesuffix(".json"))
    if isinstance(value, bool) or not isinstance(value, str | int) or str(value) == "":
        raise refuse(SOURCE, f"file {name}", "has no id")
    return str(value)


def _ids(name: str, task: Mapping[str, Any], field: str) -> list[str]:
    value = task.get(field)
    if value is None:
        return []
    if not isinstance(value, list) or not all(
            isinstance(v, str | int) and not isinstance(v, bool) for v in value):
        raise refuse(SOURCE, f"file {name}", f"{field} is not a list of task ids")
    return [str(v) for v in value]


def _order(task_id: str) -> tuple[int, int, str]:
    """Numeric ids in their number's order (2 before 10), then the others by name."""
    return (0, int(task_id), "") if task_id.isdigit() else (1, 0, task_id)


def _step(name: str, task: Mapping[str, Any], before: Sequence[str]) -> ImportedStep:
    where = f"file {name}"
    subject = task.get("subject")
    if not isinstance(subject, str) or not subject.strip():
        raise refuse(SOURCE, where, "has no subject")
    description = task.get("description") or ""
    if not isinstance(description, str):
        raise refuse(SOURCE, where, "description is not text")
    status = task.get("status") or "pending"
    owner = task.get("owner")
    note = None
    if status == "in_progress":
        note = (f'in_progress in Claude Code, owned by "{owner}": ask before taking it '
                "over" if isinstance(owner, str) and owner else
                "in_progress in Claude Code, owned by nobody named")
    elif status not in STATUSES:
        note = f'"{str(status)[:40]}" in Claude Code'
    return ImportedStep(key=KEY_PREFIX + _id(name, task), title=subject, where=where,
                        body=_body(description, task), priority=_priority(where, task),
                        depends_on=tuple(KEY_PREFIX + b for b in before),
                        done=STATUSES.get(str(status)) == "done", note=note)


def _priority(where: str, task: Mapping[str, Any]) -> int | None:
    """`metadata.priority`, if the task has one: 0..4, `P0`..`P4` or a word of
    PRIORITY_WORDS; any other value is refused, naming it (never guessed)."""
    metadata = task.get("metadata")
    value = metadata.get("priority") if isinstance(metadata, dict) else None
    if value is None:
        return None
    if isinstance(value, str):
        said = value.strip().lower()
        if said in PRIORITY_WORDS:
            return PRIORITY_WORDS[said]
        if said.removeprefix("p").isdigit():
            value = int(said.removeprefix("p"))
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 4:
        words = ", ".join(PRIORITY_WORDS)
        raise refuse(SOURCE, where, f"metadata.priority {str(value)[:20]!r} is not 0 "
                                    f"(highest) .. 4, P0..P4, nor one of {words}")
    return value


def _body(description: str, task: Mapping[str, Any]) -> str:
    """The description, then every field the step has no place for, as JSON."""
    rest = {k: v for k, v in task.items() if k not in KNOWN}
    if not rest:
        return description
    kept = json.dumps(rest, ensure_ascii=False, sort_keys=True)
    return "\n\n".join(p for p in (description, f"Claude Code task fields: {kept}") if p)
