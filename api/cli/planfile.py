"""Plan files for `planledger plan create FILE`: YAML, or a small Markdown shape.

YAML:

    slug: auth-refresh
    title: Refresh-token rotation
    constraints:
      rate-limit-not-in-memory: use shared storage for the refresh rate limit
    require_checks_pass: true   # optional: refuse a completion reporting a failed check
    steps:
      - key: s1
        title: Add the token_families table
      - key: s2
        title: Issue a rotating token pair
        depends_on: [s1]

Markdown (a `# title`, a `slug:` line, an optional `require_checks_pass: true` line,
`## Constraints` and `## Steps` lists; a step's `[key]` is optional and defaults to its
number; `(after: k1, k2)` names dependencies; indented lines under a step are its body):

    # Refresh-token rotation
    slug: auth-refresh
    ## Constraints
    - rate-limit-not-in-memory: use shared storage for the refresh rate limit
    ## Steps
    1. [s1] Add the token_families table
    2. [s2] Issue a rotating token pair (after: s1)
       Rotate on every use.
"""

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from planledger.api.schemas import PlanIn, PlanStepIn
from planledger.ledger.domain.errors import InvalidInput

_ITEM = re.compile(r"^\s*(?:[-*]|\d+[.)])\s+(?:\[(?P<key>[^\]]+)\]\s*)?(?P<text>.+?)\s*$")
_AFTER = re.compile(r"\s*\((?:after|depends on):\s*(?P<deps>[^)]*)\)\s*$", re.IGNORECASE)
MAX_NESTING = 32  # a plan nests four levels (plan, steps, a step, its depends_on)
_CONSTRAINT = re.compile(r"^\s*[-*]\s+`?(?P<name>[a-z0-9-]+)`?\s*:\s*(?P<rule>.+?)\s*$")


def load_plan(path: Path) -> PlanIn:
    """The plan a file describes; InvalidInput naming the problem otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInput("plan file", f"cannot read {path}: {error}") from None
    data = parse_markdown(text) if path.suffix.lower() in (".md", ".markdown") else _yaml(text)
    try:
        return PlanIn.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidInput("plan file", f"{path}: {where}: {first['msg']}") from None


def _yaml(text: str) -> Any:
    try:
        _check_nesting(text)
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise InvalidInput("plan file", f"not valid YAML: {error}") from None


def _check_nesting(text: str) -> None:
    """Refuse a file nested deeper than any plan is, naming the line, before the composer
    (which recurses once per level: 50,000 levels end in a RecursionError) builds it. The
    parser's events come from a state machine, so this pass never recurses."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise InvalidInput("plan file", f"line {line}: nested more than "
                                                f"{MAX_NESTING} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def parse_markdown(text: str) -> dict[str, Any]:
    plan: dict[str, Any] = {"constraints": {}, "steps": []}
    section = ""
    for line in text.splitlines():
        if line.startswith("# "):
            plan["title"] = line[2:].strip()
        elif line.startswith("## "):
            section = line[3:].strip().lower()
        elif m := re.match(r"^slug:\s*(\S+)", line.strip()):
            plan["slug"] = m.group(1)
        elif m := re.match(r"^require_checks_pass:\s*(\S+)", line.strip()):
            plan["require_checks_pass"] = m.group(1)  # true or false, as PlanIn reads it
        elif section.startswith("constraint") and (c := _CONSTRAINT.match(line)):
            plan["constraints"][c["name"]] = c["rule"]
        elif section.startswith("step"):
            _step_line(plan["steps"], line)
    if "slug" not in plan and "title" in plan:
        plan["slug"] = re.sub(r"[^a-z0-9]+", "-", plan["title"].lower()).strip("-")[:64]
    return plan


def _step_line(steps: list[dict[str, Any]], line: str) -> None:
    item = _ITEM.match(line) if not line.startswith(("   ", "\t")) else None
    if item is None:
        if steps and line.strip():  # an indented line continues the step's body
            body = steps[-1]["body"]
            steps[-1]["body"] = f"{body}\n{line.strip()}" if body else line.strip()
        return
    text = item["text"]
    deps: list[str] = []
    if after := _AFTER.search(text):
        deps = [d.strip() for d in after["deps"].split(",") if d.strip()]
        text = text[:after.start()]
    key = item["key"] or str(len(steps) + 1)
    steps.append(PlanStepIn(key=key, title=text.strip(), depends_on=deps).model_dump())
