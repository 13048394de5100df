"""`import beads`, `import claude-tasks` and `export beads`: other tools' plans brought in
as one plan creation, and a plan written back as beads reads it (api.imports).

An import writes one CreatePlan: every step or none. It is authored as `plan create` is
(the local operator or `--session` on the embedded store; with `--url`, the token's
session, else a session started for the write and ended after it). Imported again into
the plan it made, it adds nothing and says so: a plan already holding a step for every
issue is left as it is. A plan that exists but lacks some of the issues is refused,
naming them, and nothing is written: an import makes a new plan or nothing, never half of
one.
"""

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from planledger.api.cli import output
from planledger.api.cli.common import answering_errors, open_client
from planledger.api.cli.grammar import Values
from planledger.api.client import Client, RemoteError
from planledger.api.imports import beads, claude_tasks
from planledger.api.imports.steps import (
    Imported,
    ImportedStep,
    create_plan,
    listed,
    ordered,
)
from planledger.api.schemas import PlanCreatedOut
from planledger.ledger.domain.errors import InvalidInput, PlanExists
from planledger.ledger.domain.plans import check_slug

MAX_SOURCE_BYTES = 64 * 1024 * 1024  # a beads export of ~50,000 issues
MAX_TASK_FILES = 10_000  # files in one task list directory


def import_beads(v: Values) -> None:
    path = Path(v["file"])
    with answering_errors():
        check_slug(v["plan"])
        imported = beads.read_beads(_read(path, beads.SOURCE))
    _import(v, beads.SOURCE, path, imported, v["title"] or f"Imported from beads "
                                                           f"({path.name})")


def import_claude_tasks(v: Values) -> None:
    path = Path(v["dir"])
    with answering_errors():
        check_slug(v["plan"])
        imported = claude_tasks.read_task_list(_read_list(path))
    _import(v, claude_tasks.SOURCE, path, imported, v["title"] or f"Imported from Claude "
                                                                  f"Code ({path.name})")


def export_beads(v: Values) -> None:
    with open_client(v["db"], v["url"]) as client:
        text = beads.write_beads(client.plan(v["plan"]))
    if v["output"] in (None, "-"):
        output.echo(text.rstrip("\n"))
        return
    with answering_errors():
        _write_whole(Path(v["output"]), text)


def _read(path: Path, source: str) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise InvalidInput(source, f"{path} is {size} bytes; an import reads at most "
                                       f"{MAX_SOURCE_BYTES}")
        with path.open("rb") as file:
            data = file.read(MAX_SOURCE_BYTES + 1)  # it may have grown since
    except OSError as error:
        raise InvalidInput(source, f"cannot read {path}: {error.strerror}") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise InvalidInput(source, f"{path} is over {MAX_SOURCE_BYTES} bytes")
    return data


def _read_list(path: Path) -> list[tuple[str, bytes]]:
    """Each regular file of the list directory, by name, with its content."""
    source = claude_tasks.SOURCE
    try:
        names = sorted(entry.name for entry in os.scandir(path) if entry.is_file())
    except OSError as error:
        raise InvalidInput(source, f"cannot read the directory {path}: "
                                   f"{error.strerror}") from None
    if len(names) > MAX_TASK_FILES:
        raise InvalidInput(source, f"{path} holds {len(names)} files; an import reads at "
                                   f"most {MAX_TASK_FILES}")
    return [(name, _read(path / name, source) if name.endswith(".json") else b"")
            for name in names]


def _import(v: Values, source: str, path: Path, imported: Imported, title: str) -> None:
    with answering_errors():
        steps = ordered(source, imported.steps)
        if not steps:
            raise InvalidInput(source, f"{path} holds no issue to import")
    slug = v["plan"]
    with open_client(v["db"], v["url"], v["session"], v["token"]) as client:
        made = _write(client, slug, title, steps)
    answer: dict[str, Any] = {
        "plan": slug, "added": 0 if made is None else len(made.steps),
        "issues": len(steps), "done": sum(s.done for s in steps),
        "noted": sum(s.note is not None for s in steps), "skipped": dict(imported.skipped),
        "steps": [] if made is None else [{"key": s.key, "id": s.step_id, "ref": s.ref}
                                          for s in made.steps]}
    if v["json"]:
        output.echo(json.dumps(answer, indent=2))
    else:
        _say(answer, path)


def _write(client: Client, slug: str, title: str,
           steps: tuple[ImportedStep, ...]) -> PlanCreatedOut | None:
    """The plan created with every step, or None: it holds them all already."""
    if _already_there(client, slug, steps):
        return None
    try:
        return client.create_plan(create_plan(slug, title, "", steps))
    except (PlanExists, RemoteError):
        if _already_there(client, slug, steps):  # another import made it just now
            return None
        raise


def _already_there(client: Client, slug: str, steps: tuple[ImportedStep, ...]) -> bool:
    """Whether the plan exists and holds a step for every issue (True: nothing to add).
    A plan that exists without some of them is refused, naming them: nothing is
    written."""
    if slug not in {p.slug for p in client.plans()}:
        return False
    held = {s.key for s in client.plan(slug).steps}
    missing = [s.key for s in steps if s.key not in held]
    if missing:
        raise InvalidInput("plan", f'"{slug}" exists and lacks {len(missing)} of the '
                                   f"{len(steps)} issues ({listed(missing)}); an import "
                                   "creates a new plan or adds nothing: name another --plan")
    return True


def _say(answer: dict[str, Any], path: Path) -> None:
    slug = answer["plan"]
    if not answer["added"]:
        output.line(f'nothing to add: plan "{slug}" already holds all {answer["issues"]} '
                    f"issues of {path}")
    else:
        line = f'imported {answer["added"]} steps into plan "{slug}"'
        held = [f"{answer[k]} {word}" for k, word in (("done", "done"),
                                                      ("noted", "with a note")) if answer[k]]
        output.line(line + (f" ({', '.join(held)})" if held else ""))
    if answer["skipped"]:
        output.line("left out: " + ", ".join(f"{why}: {n}"
                                             for why, n in answer["skipped"].items()))


def _write_whole(path: Path, text: str) -> None:
    """Write `text` to `path` in one rename: a reader never sees half an export."""
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent or Path("."), prefix=".export-")
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except OSError as error:
        raise InvalidInput("output", f"cannot write {path}: {error.strerror}") from None
