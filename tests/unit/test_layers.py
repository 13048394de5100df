"""The layers you can see: every module's imports, read from its source with `ast`, go one
way (ARCHITECTURE.md's table), and no module reaches itself through its imports.

domain <- ledger <- adapters (infra/) and read side (projections/) <- interfaces (api/)
<- the program's entry point (planledger/main.py); replays/ and bench/ stand beside the
interfaces: they may import them, the interfaces never import them, and they never import
each other. The ledger and the read side import no web framework and no database driver,
and no module imports a package the product no longer depends on (rich, typer).

Every import counts, wherever it is written: one inside a function (loaded late to keep a
start-up cheap) or under `TYPE_CHECKING` ties the modules together all the same.
"""

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("ledger", "projections", "infra", "api", "replays", "bench")
ENTRY = ("planledger.__main__", "planledger.main")  # the program: it may import anything

# Each layer by the module prefix that holds it (the longest prefix wins), and the layers
# its modules may import.
LAYER_OF = {
    "planledger.ledger.domain": "domain",
    "planledger.ledger": "ledger",
    "planledger.infra": "adapters",
    "planledger.projections": "read side",
    "planledger.api": "interfaces",
    "planledger.replays": "replays",
    "planledger.bench": "bench",
}
MAY_IMPORT = {
    "domain": {"domain"},
    "ledger": {"domain", "ledger"},
    "read side": {"domain", "ledger", "read side"},
    # An adapter implements a port of the layer that uses it: the read side's too.
    "adapters": {"domain", "ledger", "read side", "adapters"},
    "interfaces": {"domain", "ledger", "read side", "adapters", "interfaces"},
    "replays": {"domain", "ledger", "read side", "adapters", "interfaces", "replays"},
    "bench": {"domain", "ledger", "read side", "adapters", "interfaces", "bench"},
}
# Outside packages a layer must not import: web frameworks, clients, drivers and screens
# stay out of the ledger and the read side (which reach a database only through the
# adapters the wiring hands them).
WEB = {"fastapi", "starlette", "sse_starlette", "uvicorn", "httpx", "mcp"}
DRIVERS = {"sqlite3", "psycopg", "psycopg_pool", "eventsourcing.sqlite",
           "eventsourcing.postgres"}
FORBIDDEN_OUTSIDE = {"ledger": WEB | DRIVERS, "read side": WEB | DRIVERS}
# Packages the product no longer depends on (issue 29; the command line prints through
# api/cli/output.py and parses with argparse): no module of any layer, nor the entry point,
# imports them, and pyproject.toml does not declare them. The test tools may still install
# them.
NOT_DEPENDED_ON = {"rich", "typer"}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the module imported, as written (a name inside it resolved away)
    line: int


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["planledger", *parts] if parts[0] != "planledger" else parts)


def our_files() -> Iterator[Path]:
    for folder in FOLDERS:
        yield from sorted((ROOT / folder).rglob("*.py"))
    yield from sorted((ROOT / "planledger").glob("*.py"))


def _package(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def imports_of(path: Path, known: set[str]) -> Iterator[Import]:
    """Every import in the file, at any depth: `from a import b` names module a.b where
    there is one, else a."""
    module = module_name(path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # `from . import x` in a.b.c names a.b.x; `..` climbs one more
                package = _package(module, path).split(".")[:1 - node.level or None]
                base = ".".join([*package, base] if base else package)
            for alias in node.names:
                inner = f"{base}.{alias.name}"
                yield Import(module, inner if inner in known else base, node.lineno)


@pytest.fixture(scope="module")
def graph() -> list[Import]:
    files = list(our_files())
    known = {module_name(f) for f in files}
    return list(dict.fromkeys(found for f in files for found in imports_of(f, known)))


def test_the_graph_holds_imports_at_the_top_and_inside_functions(graph: list[Import]) -> None:
    edges = {(found.source, found.target) for found in graph}
    assert ("planledger.main", "planledger.api.cli") in edges
    assert ("planledger.api.runtime", "planledger.infra.pg_checkpoints") in edges  # lazy


def layer_of(module: str) -> str | None:
    matches = [p for p in LAYER_OF if module == p or module.startswith(p + ".")]
    return LAYER_OF[max(matches, key=len)] if matches else None


def _where(found: Import) -> str:
    return f"{found.source}:{found.line} imports {found.target}"


def test_each_layer_imports_only_the_layers_below_it(graph: list[Import]) -> None:
    wrong = []
    for found in graph:
        source = layer_of(found.source)
        if source is None:
            continue  # the entry point and the root package
        if found.target in ENTRY:
            wrong.append(f"{_where(found)} (the entry point)")
            continue
        target = layer_of(found.target)
        if target is not None and target not in MAY_IMPORT[source]:
            wrong.append(f"{_where(found)} ({source} -> {target})")
    assert not wrong, "\n".join(wrong)


def test_the_domain_imports_the_standard_library_only(graph: list[Import]) -> None:
    wrong = [_where(found) for found in graph if layer_of(found.source) == "domain"
             and layer_of(found.target) != "domain"
             and found.target.split(".")[0] not in sys.stdlib_module_names]
    assert not wrong, "\n".join(wrong)


def test_the_ledger_and_the_read_side_import_no_web_framework_and_no_driver(
    graph: list[Import],
) -> None:
    wrong = []
    for found in graph:
        banned = FORBIDDEN_OUTSIDE.get(layer_of(found.source) or "", set())
        if any(found.target == b or found.target.startswith(b + ".") for b in banned):
            wrong.append(_where(found))
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_a_package_the_product_no_longer_depends_on(
    graph: list[Import],
) -> None:
    wrong = [_where(found) for found in graph
             if found.target.split(".")[0] in NOT_DEPENDED_ON]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {re.split(r"[^A-Za-z0-9_.-]", requirement, maxsplit=1)[0].lower()
                for requirement in project["dependencies"]}
    assert not wrong, "\n".join(wrong)
    assert not declared & NOT_DEPENDED_ON


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module, or of one that imports
    itself (Tarjan's algorithm, written as a loop: deep import chains stay off the stack)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in edges.get(node, ()):
                    found.append(sorted(component))
    return found


def test_cycles_finds_a_loop_through_three_modules_and_nothing_in_a_chain() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert cycles({"a": {"a"}}) == [["a"]]


def test_no_module_imports_itself_through_others(graph: list[Import]) -> None:
    edges: dict[str, set[str]] = {}
    for found in graph:
        if found.target.startswith("planledger.") or found.target == "planledger":
            edges.setdefault(found.source, set()).add(found.target)
    loops = [" <-> ".join(component) for component in cycles(edges)]
    assert not loops, "\n".join(loops)


# The library's recorder and mapper are the store's insides: only the store (and its
# reading by position) and the adapters touch them; the benchmarks do too, to measure the
# bare library beside us.
INSIDES = {"recorder", "mapper"}
MAY_TOUCH_INSIDES = ("planledger.ledger.store", "planledger.ledger.sealing",
                     "planledger.ledger.notification_log", "planledger.infra",
                     "planledger.bench")


def insides_touched(path: Path) -> list[str]:
    """Each `.recorder` or `.mapper` the file reads, as `line: .name`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [f"{node.lineno}: .{node.attr}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in INSIDES]


def test_only_the_store_and_its_adapters_touch_the_librarys_recorder_and_mapper() -> None:
    wrong = [f"{path.relative_to(ROOT)}:{touch}" for path in our_files()
             if not module_name(path).startswith(MAY_TOUCH_INSIDES)
             for touch in insides_touched(path)]
    assert not wrong, "\n".join(wrong)


def test_a_touch_of_the_recorder_is_seen(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f(store):\n    return store.recorder.max_notification_id()\n")
    assert insides_touched(sample) == ["2: .recorder"]
