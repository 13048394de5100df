"""What an import makes of another tool's issues: one `ImportedStep` each, in an order the
ledger can create them in, checked against the ledger's own rules before anything is
written, each refusal naming where in the source the issue was.

An import is refused whole, never cut short: a bad issue, a cycle or a dependency on an
issue the source does not hold stops it before the one CreatePlan is sent.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

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
    after the steps it waits on, its parent and its origin (a plan names only earlier
    steps). Refused, nothing written: a key given twice, a key no step has, a cycle of
    steps waiting on each other (a parent waits on its children, ledger.domain.relations)
    or one of steps each under or found from the next."""
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
    children: dict[str, list[str]] = {}
    for step in steps:
        if step.parent is not None:
            children.setdefault(step.parent, []).append(step.key)
    _topological(source, steps, by_key, lambda s: (*s.depends_on, *children.get(s.key, ())),
                 "the dependencies (a parent waits on its children) form a cycle")
    return tuple(by_key[k] for k in _topological(source, steps, by_key, ImportedStep.named,
                                                 "parents and origins form a cycle"))


def _topological(source: str, steps: Sequence[ImportedStep],
                 by_key: Mapping[str, ImportedStep],
                 before: Callable[[ImportedStep], Iterable[str]], cycle_is: str) -> list[str]:
    """The keys, each after the keys `before` names for it: depth first, in source order,
    without recursion (a chain may be 100,000 long). Meeting a step on the path is a
    cycle, refused naming it."""
    placed: dict[str, None] = {}
    on_path: set[str] = set()
    for root in steps:
        if root.key in placed:
            continue
        path: list[tuple[str, Iterator[str]]] = [(root.key, iter(before(root)))]
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
                raise refuse(source, f"{by_key[following].where} ({following})",
                             f"{cycle_is}: {_cycle(keys[keys.index(following):])}")
            else:
                on_path.add(following)
                path.append((following, iter(before(by_key[following]))))
    return list(placed)


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
