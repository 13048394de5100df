"""Other projects' code through its public interfaces only: no product module imports a
private name of the event-store library or the MCP SDK, reads or calls one of their
private attributes, or overrides one of their private methods. Found with `ast`: the
libraries' own sources say which single-underscore names they define (methods, class
attributes and `self._x = ...` in their classes); a product module that spells one of
those names on anything it did not define itself is reaching inside.

A use that remains because the library has no public way yet is listed in `REMAINING`
with why, and the tests that fail when the library changes under it. The list is checked
both ways: a new use fails, and so does a listed one that is gone. It is a debt to pay,
not a place to add to.
"""

import ast
import importlib.util
from collections.abc import Iterator
from pathlib import Path

from tests.unit.test_layers import module_name, our_files

LIBRARIES = ("eventsourcing", "mcp")

# (module, name): why it remains, and the test that holds the library to it.
REMAINING = {
    ("planledger.api.mcp.acting", "_connection"):
        "mcp 2.3 hands a tool the request's ServerSession only, which keeps the session's "
        "Connection private; should a later SDK move it, every call reads as connectionless "
        "and needs its token, never a wider grant (tests/reliability/"
        "test_mcp_acting_session.py, tests/integration/test_mcp_connection_end.py)",
}

# Builtins that reach an attribute by a name given as a string.
_BY_NAME = {"getattr", "setattr", "hasattr", "delattr"}


def _library_root(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, name
    return Path(next(iter(spec.submodule_search_locations)))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_in_classes(tree: ast.AST) -> Iterator[str]:
    """The single-underscore names a module's classes define."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in ast.walk(node):
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield item.name
                elif isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store):
                    yield item.attr
                elif isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store):
                    yield item.id


def library_private_names() -> set[str]:
    names: set[str] = set()
    for library in LIBRARIES:
        for path in _library_root(library).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            names.update(n for n in _defined_in_classes(tree) if _private(n))
    return names


def _imported(module: str, node: ast.AST) -> Iterator[tuple[str, str, int]]:
    """A private module or name of a library, imported."""
    if isinstance(node, ast.ImportFrom) and node.module:
        if node.module.split(".")[0] not in LIBRARIES:
            return
        if any(_private(part) for part in node.module.split(".")):
            yield module, node.module, node.lineno
        yield from ((module, a.name, node.lineno) for a in node.names if _private(a.name))
    elif isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            if parts[0] in LIBRARIES and any(_private(p) for p in parts):
                yield module, alias.name, node.lineno


def uses(module: str, tree: ast.AST, private: set[str], derived: set[str],
         by_name: set[str] | None = None) -> Iterator[tuple[str, str, int]]:
    """(module, name, line) for each library-private name the module spells: imported,
    read or called on anything, or defined as a method of a class in `derived` (ours,
    deriving from a library's); and each of `by_name` (default: `private`) reached by a
    string (`getattr(x, "_name")`: spelt so, it is a reach past the type checker, however
    many classes share the name)."""
    by_name = private if by_name is None else by_name
    for node in ast.walk(tree):
        yield from _imported(module, node)
        if isinstance(node, ast.Attribute) and node.attr in private:
            yield module, node.attr, node.lineno
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in _BY_NAME and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and node.args[1].value in by_name):
            yield module, str(node.args[1].value), node.lineno
        elif isinstance(node, ast.ClassDef) and node.name in derived:
            for item in node.body:
                if (isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                        and item.name in private):
                    yield module, item.name, item.lineno


def _bases(node: ast.ClassDef) -> set[str]:
    return {ast.unparse(b).rpartition(".")[2] for b in node.bases}


def library_derived(trees: dict[str, ast.AST]) -> set[str]:
    """The names of our classes that derive from a library's class, at any depth."""
    classes = [node for tree in trees.values() for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef)]
    imported = {alias.asname or alias.name for tree in trees.values()
                for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module and node.module.split(".")[0] in LIBRARIES
                for alias in node.names}
    derived: set[str] = set()
    while True:
        more = {c.name for c in classes if _bases(c) & (imported | derived)} - derived
        if not more:
            return derived
        derived |= more


def _library_names_of(module: str, name: str) -> set[str]:
    """The private names the library classes under our class `module.name` define."""
    import inspect
    from importlib import import_module

    ours = getattr(import_module(module), name)
    names: set[str] = set()
    for base in ours.__mro__:
        if base.__module__.split(".")[0] in LIBRARIES:
            tree = ast.parse(inspect.getsource(base))
            names.update(n for n in _defined_in_classes(tree) if _private(n))
    return names


def ours_alone(trees: dict[str, ast.AST], derived: set[str]) -> set[str]:
    """The private names we define ourselves: in our modules' top level, in our classes
    that derive from no library class, and new ones in those that do."""
    names: set[str] = set()
    for module, tree in trees.items():
        assert isinstance(tree, ast.Module)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                defined = {n for n in _defined_in_classes(node) if _private(n)}
                if node.name in derived:
                    defined -= _library_names_of(module, node.name)
                names.update(defined)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {n for n in names if _private(n)}


def test_product_code_touches_no_private_name_of_the_libraries() -> None:
    trees = {module_name(p): ast.parse(p.read_text(encoding="utf-8"), str(p))
             for p in our_files()}
    library = library_private_names()
    # A name both sides define is the library's where a module spells it on a library
    # object; to tell the two apart without types, a name counts as the library's unless
    # a class of ours that derives from no library class defines it.
    derived = library_derived(trees)
    private = library - ours_alone(trees, derived)
    found = {(m, n): line for m, tree in trees.items()
             for m, n, line in uses(m, tree, private, derived, library)}
    unlisted = [f"{m}:{line} uses {n}" for (m, n), line in found.items()
                if (m, n) not in REMAINING]
    gone = [f"{m} no longer uses {n}: take it off REMAINING" for m, n in REMAINING
            if (m, n) not in found]
    assert not unlisted and not gone, "\n".join(unlisted + gone)


def test_the_finder_sees_a_private_override_and_a_private_read() -> None:
    source = ("from eventsourcing.popo import POPOApplicationRecorder\n"
              "class R(POPOApplicationRecorder):\n"
              "    def _update_table(self, events):\n"
              "        return len(self._stored_events)\n")
    found = {n for _, n, _ in uses("m", ast.parse(source), library_private_names(), {"R"})}
    assert found == {"_update_table", "_stored_events"}


def test_the_finder_sees_a_private_name_reached_by_a_string() -> None:
    source = "def f(session):\n    return getattr(session, '_stored_events', None)\n"
    found = {n for _, n, _ in uses("m", ast.parse(source), library_private_names(), set())}
    assert found == {"_stored_events"}
