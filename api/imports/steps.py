"""What an import makes of another tool's issues: one `ImportedStep` each, in an order the
ledger can create them in, checked against the ledger's own rules before anything is
written, each refusal naming where in the source the issue was.

An import is refused whole, never cut short: a bad issue, a cycle or a dependency on an
issue the source does not hold stops it before the one CreatePlan is sent.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from planledger.api.schemas import PlanIn, PlanStepIn
from planledger.ledger.domain import plans as plan_rules
from planledger.ledger.domain.errors import InvalidInput
from planledger.ledger.domain.references import check_key

MAX_LABELS = 50  # beads puts no bound on labels; a step keeps at most this many
MAX_LABEL = 100  # characters of one label
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
        """Every key this step names, in the order the checks report them."""
        return (*self.depends_on, *(k for k in (self.parent, self.discovered_from) if k),
                *(target for _, target in self.links))

    def before(self) -> tuple[str, ...]:
        """The keys that must be created before this step: what it waits on, its parent and
        its origin."""
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
    """`step` if the ledger would take it (its key, title, body, note, priority and
    labels), else the ledger's own reason, naming where the issue was."""
    try:
        check_key(step.key)
        plan_rules.check_line("title", step.title, plan_rules.MAX_TITLE, required=True)
        plan_rules.check_text("body", step.body, plan_rules.MAX_BODY, required=False)
        if step.note is not None:
            plan_rules.check_text("note", step.note, plan_rules.MAX_BODY, required=False)
        plan_rules.check_priority(step.priority)
        _check_labels(step.labels)
        if len(step.depends_on) > plan_rules.MAX_DEPENDENCIES:
            raise InvalidInput("dependencies", f"{len(step.depends_on)}; the limit is "
                                               f"{plan_rules.MAX_DEPENDENCIES}")
    except InvalidInput as error:
        raise refuse(source, f"{step.where} ({step.key[:64]})", str(error)) from None
    return step


def _check_labels(labels: Sequence[str]) -> None:
    if len(labels) > MAX_LABELS:
        raise InvalidInput("labels", f"{len(labels)} of them; the limit is {MAX_LABELS}")
    for label in labels:
        plan_rules.check_line("label", label, MAX_LABEL, required=True)


def ordered(source: str, steps: Sequence[ImportedStep]) -> tuple[ImportedStep, ...]:
    """The steps in their source's order, moved only as far as needed for each to come
    after the steps it waits on, its parent and its origin (a plan names only earlier
    steps). Refused, nothing written: a key given twice, a key no step has, a cycle."""
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
    return _topological(source, steps, by_key)


def _topological(source: str, steps: Sequence[ImportedStep],
                 by_key: Mapping[str, ImportedStep]) -> tuple[ImportedStep, ...]:
    """Depth first, in source order, without recursion (a chain may be 100,000 long): a
    step is placed once everything before it is; meeting a step on the path is a cycle."""
    placed: dict[str, None] = {}
    on_path: set[str] = set()
    for root in steps:
        if root.key in placed:
            continue
        path: list[tuple[str, Iterable[str]]] = [(root.key, iter(root.before()))]
        on_path.add(root.key)
        while path:
            key, pending = path[-1]
            following = next((k for k in pending if k not in placed), None)
            if following is None:
                path.pop()
                on_path.discard(key)
                placed[key] = None
            elif following in on_path:
                cycle = [k for k, _ in path][[k for k, _ in path].index(following):]
                raise refuse(source, by_key[following].where,
                             f"the dependencies form a cycle: "
                             f"{' -> '.join([*cycle, following])}")
            else:
                on_path.add(following)
                path.append((following, iter(by_key[following].before())))
    return tuple(by_key[k] for k in placed)


def listed(keys: Sequence[str]) -> str:
    """Keys as a message lists them: the first few, then how many more."""
    shown = ", ".join(repr(k[:64]) for k in keys[:MAX_SHOWN_KEYS])
    more = len(keys) - MAX_SHOWN_KEYS
    return f"{shown} and {more} more" if more > 0 else shown


def plan_in(slug: str, title: str, steps: Sequence[ImportedStep]) -> PlanIn:
    """The one plan creation that writes the import: `steps` as `ordered` gave them."""
    return PlanIn(slug=slug, title=title, steps=[
        PlanStepIn(key=s.key, title=s.title, body=_with_relations(s), priority=s.priority,
                   depends_on=list(s.depends_on)) for s in steps])


def _with_relations(step: ImportedStep) -> str:
    """The body, and after it what the step holds beyond a body, a priority and its
    dependencies (its parent, origin, labels, links, state and note) as text."""
    said = [f"{name}: {value}" for name, value in (
        ("parent", step.parent), ("discovered from", step.discovered_from),
        ("labels", ", ".join(step.labels)),
        ("links", ", ".join(f"{k} {t}" for k, t in step.links)),
        ("closed in the source", "yes" if step.done else ""), ("note", step.note)) if value]
    return "\n\n".join(p for p in (step.body, "\n".join(said)) if p)
