"""What an import makes of another tool's issues: one `ImportedStep` each, in an order the
ledger can create them in, checked against the ledger's own rules before anything is
written, each refusal naming where in the source the issue was.

An import is refused whole, never cut short: a bad issue, a cycle or a dependency on an
issue the source does not hold stops it before the one CreatePlan is sent.
"""

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from planledger.api.text import lone_surrogate
from planledger.ledger import commands as c
from planledger.ledger.domain import plans as plan_rules
from planledger.ledger.domain import relations
from planledger.ledger.domain.errors import InvalidInput
from planledger.ledger.domain.references import check_key
from planledger.ledger.domain.state import Link

MAX_SHOWN_KEYS = 10  # keys a message lists before it says "and N more"


@dataclass(frozen=True)
class ImportedStep:
    """One issue of the source, as a step. `key` is the source's id (a reference within
    the plan); `depends_on`, `parent`, `discovered_from` and the targets of `links` name
    other steps of the same import by key. `where` says where the issue was (`line 3`,
    `file 4.json`), for messages."""

    key: str
    title: str
    where: str
    body: str = ""
    priority: int | None = None
    depends_on: tuple[str, ...] = ()
    parent: str | None = None
    discovered_from: str | None = None
    labels: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()  # (kind, key): a relation that does not block
    done: bool = False  # closed in the source: it arrives done
    note: str | None = None  # a handoff note left at creation (who held it in the source)
    declared_after: tuple[str, ...] = ()  # dependencies declared once the plan exists

    def named(self) -> tuple[str, ...]:
        """The keys this step names that must be steps of the import: what it waits on,
        its parent and its origin (a link's target is kept as text, never resolved)."""
        return (*self.depends_on, *(k for k in (self.parent, self.discovered_from) if k))


@dataclass(frozen=True)
class Imported:
    """A source read whole: its steps, and what was left out of it, counted by why
    (`{"deleted issue": 2}`), so the command can say so."""

    steps: tuple[ImportedStep, ...]
    skipped: Mapping[str, int] = field(default_factory=dict)


def json_kind(value: object) -> str:
    """What a JSON value is, in a message's words: `null`, `a list`, `text`, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    kinds = ((str, "text"), (int, "a number"), (float, "a number"), (list, "a list"),
             (dict, "an object"))
    return next((word for kind, word in kinds if isinstance(value, kind)), "a value")


def strip_bom(data: bytes) -> bytes:
    """`data` without the UTF-8 byte order mark some editors put at the start."""
    return data.removeprefix(b"\xef\xbb\xbf")


def refuse(source: str, where: str, problem: str) -> InvalidInput:
    """The refusal of a whole import for one issue: `invalid beads file: line 3: …`."""
    return InvalidInput(source, f"{where}: {problem}")


def checked(source: str, step: ImportedStep) -> ImportedStep:
    """`step` if the ledger would take it (its key, title, body, note, priority, labels
    and links), else the ledger's own reason, naming where the issue was."""
    try:
        check_key(step.key)
        plan_rules.check_line("title", step.title, plan_rules.MAX_TITLE, required=True)
        plan_rules.check_text("body", step.body, plan_rules.MAX_BODY, required=False)
        if step.note is not None:
            plan_rules.check_text("note", step.note, plan_rules.MAX_BODY, required=False)
        plan_rules.check_priority(step.priority)
        relations.check_labels(step.labels)
        relations.check_links([Link(kind, target) for kind, target in step.links])
        if len(step.depends_on) > plan_rules.MAX_DEPENDENCIES:
            raise InvalidInput("dependencies", f"{len(step.depends_on)}; the limit is "
                                               f"{plan_rules.MAX_DEPENDENCIES}")
    except InvalidInput as error:
        raise refuse(source, f"{step.where} ({step.key[:64]})", str(error)) from None
    return step


def ordered(source: str, steps: Sequence[ImportedStep]) -> tuple[ImportedStep, ...]:
    """The steps in their source's order, moved only as far as needed for each to come
    after its parent, the steps it waits on and its origin (a plan names only earlier
    steps). Refused, nothing written: a key given twice, a key no step has, or a cycle of
    steps waiting on each other, as the ledger counts waiting (ledger.domain.relations: a
    step waits on its dependencies and a parent on its children; an origin orders
    nothing). An order the ledger would take but one creation cannot write (an epic that
    waits on its own grandchild) holds such a dependency back, in `declared_after`, and an
    origin that cannot come first is kept as a link."""
    by_key: dict[str, ImportedStep] = {}
    for step in steps:
        if step.key in by_key:
            raise refuse(source, step.where, f"{step.key!r} is given twice (first at "
                                             f"{by_key[step.key].where})")
        by_key[step.key] = step
    for step in steps:
        missing = [k for k in step.named() if k not in by_key]
        if missing:
            raise refuse(source, f"{step.where} ({step.key})",
                         f"names {listed(missing)}, which the source does not hold")
    _check_no_waiting_cycle(source, steps, by_key)
    order, held_back = _creation_order(steps, by_key)
    placed: set[str] = set()
    result = []
    for key in order:
        result.append(_held_back(by_key[key], held_back.get(key, set()), placed))
        placed.add(key)
    return tuple(result)


def _check_no_waiting_cycle(source: str, steps: Sequence[ImportedStep],
                            by_key: Mapping[str, ImportedStep]) -> None:
    """Refuse steps that wait on each other in a ring, naming it, as the ledger would."""
    children: dict[str, list[str]] = {}
    for step in steps:
        if step.parent is not None:
            children.setdefault(step.parent, []).append(step.key)
    placed: dict[str, None] = {}
    on_path: set[str] = set()
    for root in steps:
        if root.key in placed:
            continue
        path: list[tuple[str, Iterator[str]]] = [
            (root.key, iter((*root.depends_on, *children.get(root.key, ()))))]
        on_path.add(root.key)
        while path:
            key, pending = path[-1]
            following = next((k for k in pending if k not in placed), None)
            if following is None:
                path.pop()
                on_path.discard(key)
                placed[key] = None
            elif following in on_path:
                keys = [k for k, _ in path]
                ring = keys[keys.index(following):]
                under = any(by_key[b].parent == a for a, b in
                            zip(ring, [*ring[1:], ring[0]], strict=True))
                what = ("the dependencies and parents form a cycle (a parent waits on its "
                        "children)" if under else "the dependencies form a cycle")
                raise refuse(source, f"{by_key[following].where} ({following})",
                             f"{what}: {_cycle(ring)}")
            else:
                on_path.add(following)
                step = by_key[following]
                path.append((following, iter((*step.depends_on,
                                              *children.get(following, ())))))


def _creation_order(steps: Sequence[ImportedStep], by_key: Mapping[str, ImportedStep]
                    ) -> tuple[list[str], dict[str, set[str]]]:
    """The keys in an order to create them in: each after its parent, and after what it
    waits on and its origin where that can be (depth first, in source order, without
    recursion: a chain may be 100,000 long). A dependency or origin that would have to
    come after the step (a cycle through a parent, which the ledger allows since a
    parent's waiting runs the other way) is held back: the second value, by step."""
    held_back: dict[str, set[str]] = {}

    def before(step: ImportedStep) -> Iterator[tuple[bool, str]]:
        skip = held_back.get(step.key, set())
        yield from ((False, p) for p in (step.parent,) if p is not None)
        yield from ((True, k) for k in (*step.depends_on, step.discovered_from)
                    if k is not None and k not in skip)

    placed: dict[str, None] = {}
    for root in steps:
        path: list[tuple[str, Iterator[tuple[bool, str]], bool]] = []
        at: dict[str, int] = {}  # a key on the path: its index there
        if root.key not in placed:
            path.append((root.key, before(root), False))
            at[root.key] = 0
        while path:
            key, pending, _ = path[-1]
            following = next(((m, k) for m, k in pending if k not in placed), None)
            if following is None:
                path.pop()
                del at[key]
                placed[key] = None
            elif following[1] in at:
                # Hold back the last movable edge of the ring (one exists: a ring of
                # parents alone waits on itself, refused above) and retry from its step.
                first = at[following[1]]
                flags = [*(movable for _, _, movable in path[first + 1:]), following[0]]
                start = first + max(i for i, movable in enumerate(flags) if movable)
                target = path[start + 1][0] if start + 1 < len(path) else following[1]
                held_back.setdefault(path[start][0], set()).add(target)
                for gone, _, _ in path[start:]:
                    del at[gone]
                name, _, arrived = path[start]
                del path[start:]
                path.append((name, before(by_key[name]), arrived))
                at[name] = start
            else:
                at[following[1]] = len(path)
                path.append((following[1], before(by_key[following[1]]), following[0]))
    return list(placed), held_back


def _held_back(step: ImportedStep, keys: set[str], placed: set[str]) -> ImportedStep:
    """`step` naming only earlier steps: a held-back dependency moves to
    `declared_after`; an origin not placed before it becomes a `discovered-from` link."""
    keys = keys - placed
    origin = step.discovered_from
    if origin is None or origin in placed:
        links = step.links
    else:
        links, origin = (*step.links, ("discovered-from", origin)), None
    if not keys and origin == step.discovered_from:
        return step
    return replace(step, depends_on=tuple(k for k in step.depends_on if k not in keys),
                   declared_after=tuple(k for k in step.depends_on if k in keys),
                   discovered_from=origin, links=links)


def kept_open(steps: Sequence[ImportedStep], tool: str
              ) -> tuple[tuple[ImportedStep, ...], int]:
    """`steps` (as `ordered` gave them: parents first) with each parent closed in the
    source but holding an open child brought over open, with a note saying so (the ledger
    refuses a parent that arrives done over open children), and how many such parents.
    `tool` names the source in the note: "beads"."""
    children: dict[str, list[str]] = {}
    for step in steps:
        if step.parent is not None:
            children.setdefault(step.parent, []).append(step.key)
    done: dict[str, bool] = {}
    kept: list[ImportedStep] = []
    for step in reversed(steps):  # children first
        still_open = sum(1 for k in children.get(step.key, ()) if not done[k])
        if step.done and still_open:
            said = (f"closed in {tool}, but {still_open} of its children "
                    f"{'is' if still_open == 1 else 'are'} open")
            kept.append(replace(step, done=False, note="\n\n".join(
                n for n in (step.note, said) if n)))
        else:
            kept.append(step)
        done[step.key] = kept[-1].done
    reopened = sum(1 for new, old in zip(reversed(kept), steps, strict=True)
                   if old.done and not new.done)
    return tuple(reversed(kept)), reopened


def _cycle(keys: Sequence[str]) -> str:
    """`a -> b -> c -> a`; a long cycle shows its first steps and how many there are."""
    if len(keys) <= MAX_SHOWN_KEYS:
        return " -> ".join([*keys, keys[0]])
    return " -> ".join(keys[:MAX_SHOWN_KEYS]) + f" -> … ({len(keys)} steps) -> {keys[0]}"


def listed(keys: Sequence[str]) -> str:
    """Keys as a message lists them: the first few, then how many more."""
    shown = ", ".join(repr(k[:64]) for k in keys[:MAX_SHOWN_KEYS])
    more = len(keys) - MAX_SHOWN_KEYS
    return f"{shown} and {more} more" if more > 0 else shown



def create_plan(slug: str, title: str, actor: str,
                steps: Sequence[ImportedStep]) -> c.CreatePlan:
    """The one plan creation that writes the import: `steps` as `ordered` gave them."""
    return c.CreatePlan(slug, title, actor, steps=tuple(
        c.NewStep(s.title, s.body, s.depends_on, s.key, priority=s.priority,
                  parent=s.parent, discovered_from=s.discovered_from, labels=s.labels,
                  links=tuple(Link(kind, target) for kind, target in s.links),
                  done=s.done, note=s.note)
        for s in steps))


def json_object(source: str, where: str, data: bytes, limit: int, noun: str,
                ) -> dict[str, Any]:
    """The one JSON object `data` holds (an issue's line, a task's file), refused naming
    `where` and why: over `limit` bytes, not UTF-8, not JSON, nested too deeply, not an
    object, or holding a lone surrogate (api.text), which no store can write."""
    if len(data) > limit:
        raise refuse(source, where, f"is {len(data)} bytes; {_a(noun)} takes at most {limit}")
    try:
        value = json.loads(strip_bom(data).decode("utf-8"))
    except UnicodeDecodeError as error:
        raise refuse(source, where, f"is not UTF-8 text (byte {error.start + 1})") from None
    except json.JSONDecodeError as error:
        at = (f"line {error.lineno}, column {error.colno}" if error.lineno > 1
              else f"column {error.colno}")
        raise refuse(source, where, f"is not JSON: {error.msg} ({at})") from None
    except RecursionError:
        raise refuse(source, where, f"is nested too deeply to be {_a(noun)}") from None
    if not isinstance(value, dict):
        raise refuse(source, where, f"is {json_kind(value)}, not {_a(noun)} (an object)")
    try:
        broken = lone_surrogate(value)
    except RecursionError:
        raise refuse(source, where, f"is nested too deeply to be {_a(noun)}") from None
    if broken is not None:
        raise refuse(source, where, "holds a lone surrogate (half of a UTF-16 pair): not "
                                    "text")
    return value


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"
