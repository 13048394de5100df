"""`import beads`, `import claude-tasks` and `export beads`: other tools' plans brought in
as one plan creation, and a plan written back as beads reads it (api.imports).

An import writes one CreatePlan: every step or none. It is authored as `plan create` is
(the local operator or `--session` on the embedded store; with `--url`, the token's
session, else a session started for the write and ended after it). Imported again into
the plan it made, it adds nothing and says so: a plan already holding a step for every
issue, each as the source has it (api.imports.held), is left as it is. A plan that
exists but lacks some of the issues, or holds one otherwise (another title, status,
dependency, ...), is refused, naming them, and nothing is written: an import makes a new
plan or nothing, never half of one. The one exception: a dependency one creation cannot
write (an epic waiting on its own grandchild) is declared just after it.

A read never creates a store: `export beads` on a missing SQLite file says so.
"""

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from planledger.api.cli import output
from planledger.api.cli.common import answering_errors, open_client, require_store
from planledger.api.cli.grammar import Values
from planledger.api.client import Client, RemoteError, operator_name
from planledger.api.imports import beads, claude_tasks, held
from planledger.api.imports.steps import (
    Imported,
    ImportedStep,
    create_plan,
    kept_open,
    listed,
    ordered,
)
from planledger.api.schemas import PlanCreatedOut, StepRefOut
from planledger.api.settings import MAX_STEPS_SETTING
from planledger.ledger import commands as c
from planledger.ledger.domain.errors import InvalidInput, PlanExists
from planledger.ledger.domain.plans import check_slug

MAX_SOURCE_BYTES = 64 * 1024 * 1024  # a beads export of ~50,000 issues
MAX_TASK_FILES = 10_000  # files in one task list directory
STDIN = "-"
NOT_FOLLOWED = "symbolic link (not followed)"


def import_beads(v: Values) -> None:
    path = Path(v["file"])
    with answering_errors():
        check_slug(v["plan"])
        data = _read_stdin(beads.SOURCE) if v["file"] == STDIN else _read(path, beads.SOURCE)
        imported = beads.read_beads(data)
    name = "standard input" if v["file"] == STDIN else path.name
    _import(v, beads.SOURCE, path, imported, v["title"] or f"Imported from beads ({name})")


def import_claude_tasks(v: Values) -> None:
    path = Path(v["dir"])
    with answering_errors():
        check_slug(v["plan"])
        files, links = _read_list(path)
        imported = claude_tasks.read_task_list(files)
        if links:
            imported = Imported(imported.steps, {**imported.skipped, NOT_FOLLOWED: links})
    _import(v, claude_tasks.SOURCE, path, imported, v["title"] or f"Imported from Claude "
                                                                  f"Code ({path.name})")


def export_beads(v: Values) -> None:
    require_store(v["db"], v["url"])
    with open_client(v["db"], v["url"]) as client:
        text = beads.write_beads(client.plan(v["plan"]))
    if v["output"] in (None, "-"):
        output.echo(text.rstrip("\n"))
        return
    with answering_errors():
        _write_whole(Path(v["output"]), text)


def _read(path: Path, source: str, *, follow: bool = True) -> bytes:
    """The file's bytes, bounded. `follow=False`: a symbolic link is refused, even one
    put in place after the directory was listed."""
    try:
        size = path.stat(follow_symlinks=follow).st_size
        if size > MAX_SOURCE_BYTES:
            raise InvalidInput(source, f"{path} is {size} bytes; an import reads at most "
                                       f"{MAX_SOURCE_BYTES}")
        flags = os.O_RDONLY | (0 if follow else os.O_NOFOLLOW)
        with os.fdopen(os.open(path, flags), "rb") as file:
            data = file.read(MAX_SOURCE_BYTES + 1)  # it may have grown since
    except OSError as error:
        raise InvalidInput(source, f"cannot read {path}: {error.strerror}") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise InvalidInput(source, f"{path} is over {MAX_SOURCE_BYTES} bytes")
    return data


def _read_stdin(source: str) -> bytes:
    data = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise InvalidInput(source, f"standard input is over {MAX_SOURCE_BYTES} bytes")
    return data


def _read_list(path: Path) -> tuple[list[tuple[str, bytes]], int]:
    """Each regular file of the list directory, by name, with its content, and how many
    symbolic links it holds: never followed, since one may lead anywhere (/etc/passwd)."""
    source = claude_tasks.SOURCE
    try:
        entries = list(os.scandir(path))
        names = sorted(e.name for e in entries if e.is_file(follow_symlinks=False))
        links = sum(1 for e in entries if e.is_symlink())
    except OSError as error:
        raise InvalidInput(source, f"cannot read the directory {path}: "
                                   f"{error.strerror}") from None
    if len(names) > MAX_TASK_FILES:
        raise InvalidInput(source, f"{path} holds {len(names)} files; an import reads at "
                                   f"most {MAX_TASK_FILES}")
    return [(name, _read(path / name, source, follow=False) if name.endswith(".json")
             else b"") for name in names], links


def _import(v: Values, source: str, path: Path, imported: Imported, title: str) -> None:
    with answering_errors():
        tool = "Claude Code" if source == claude_tasks.SOURCE else "beads"
        steps, reopened = kept_open(ordered(source, imported.steps), tool)
        if not steps:
            what = "task" if source == claude_tasks.SOURCE else "issue"
            raise InvalidInput(source, f"{path} holds no {what} to import")
    slug = v["plan"]
    with open_client(v["db"], v["url"], v["session"], v["token"]) as client:
        made = _write(client, slug, title, steps)
    answer: dict[str, Any] = {
        "plan": slug, "added": 0 if made is None else len(made.steps),
        "issues": len(steps), "done": sum(s.done for s in steps),
        "noted": sum(s.note is not None for s in steps), "kept_open": reopened,
        "skipped": dict(imported.skipped),
        "steps": [] if made is None else [{"key": s.key, "id": s.step_id, "ref": s.ref}
                                          for s in made.steps]}
    if v["json"]:
        output.echo(json.dumps(answer, indent=2))
    else:
        _say(answer, "standard input" if v.get("file") == STDIN else str(path))


def _write(client: Client, slug: str, title: str,
           steps: tuple[ImportedStep, ...]) -> PlanCreatedOut | None:
    """The plan created with every step, or None: it holds them all already."""
    if _already_there(client, slug, steps):
        return None
    with client.authored(f"{operator_name()} (plan create)"):  # one author for both
        try:
            made = client.create_plan(create_plan(slug, title, "", steps))
        except (PlanExists, RemoteError, InvalidInput) as error:
            if MAX_STEPS_SETTING in str(error):
                raise _too_many(len(steps)) from None
            if not isinstance(error, InvalidInput) and _already_there(client, slug, steps):
                return None  # another import made it just now
            raise
        ids = {s.key: s.step_id for s in made.steps if s.key}
        for step in steps:
            if step.declared_after:  # only what one creation cannot write: rare
                client.execute(c.DeclareDependencies(
                    ids[step.key], tuple(ids[k] for k in step.declared_after),
                    client.author), StepRefOut)
    return made


def _too_many(count: int) -> InvalidInput:
    """The ledger's cap on steps a request carries, worded for an import (it cannot be
    cut into parts: it writes one plan or nothing)."""
    return InvalidInput("steps", f"{count} issues are more than the ledger takes in one "
                                 f"request, and an import writes them in one: raise "
                                 f"{MAX_STEPS_SETTING} (on the server, with --url) to at "
                                 f"least {count} and import again")


def _already_there(client: Client, slug: str, steps: tuple[ImportedStep, ...]) -> bool:
    """Whether the plan exists and holds every issue as the source has it (True: nothing
    to add). A plan that exists without some of them, or holding one otherwise, is
    refused, naming them and what differs: nothing is written."""
    if slug not in {p.slug for p in client.plans()}:
        return False
    plan = client.plan(slug)
    keys = {s.key for s in plan.steps}
    missing = [s.key for s in steps if s.key not in keys]
    if missing:
        raise InvalidInput("plan", f'"{slug}" exists and lacks {len(missing)} of the '
                                   f"{len(steps)} issues ({listed(missing)}); an import "
                                   "creates a new plan or adds nothing: name another --plan")
    if differs := held.differences(plan, steps):
        raise InvalidInput("plan", f'plan {slug} holds {held.summary(differs)}; an import '
                                   "changes no step: name another --plan")
    return True


def _say(answer: dict[str, Any], path: str) -> None:
    slug = answer["plan"]
    if not answer["added"]:
        output.line(f'nothing to add: plan "{slug}" already holds all {answer["issues"]} '
                    f"issues of {path}")
    else:
        added = answer["added"]
        line = f'imported {added} step{"" if added == 1 else "s"} into plan "{slug}"'
        counts = [f"{answer[k]} {word}" for k, word in (
            ("done", "done"), ("noted", "with a note"),
            ("kept_open", "closed in the source but kept open for open children"))
            if answer[k]]
        output.line(line + (f" ({', '.join(counts)})" if counts else ""))
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
