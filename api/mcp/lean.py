"""Step answers over MCP without what is empty, and output schemas that say so.

An agent pays for every byte of an answer. A page of steps over HTTP keeps its fixed shape
(every field, `null` and `[]` included, and `id` beside `step_id`): scripts and generated
clients read it so. Over MCP, a step leaves out each field that is empty: null, an empty
list or mapping, and a flag or count at its default of false or 0. The tool's output
schema says the same: those fields are not required. The SDK's client validates each
answer against that schema, so the schema must allow every answer that is left lean.
`id` stays beside `step_id`, though it repeats it: agents that came from other task queues
(Seamless's) read a task's `id`, and a contract is not broken to save a few bytes a step.

A step is an object whose schema lists both `step_id` and `id` (api.schemas.StepAnswer and
every answer built on it).
"""

import copy
from typing import Any

Schema = dict[str, Any]

LEAN_NOTE = ("Fields that are empty (null, [], {}, or false, 0 or \"\" where that is the "
             "default) are left out.")


def is_step(schema: Schema) -> bool:
    properties = schema.get("properties")
    return isinstance(properties, dict) and "step_id" in properties and "id" in properties


def lean_schema(schema: Schema | None) -> Schema | None:
    """The output schema with every step object's empty-able fields made optional."""
    if schema is None:
        return None
    lean = copy.deepcopy(schema)
    _lean_objects(lean)
    return lean


def _lean_objects(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _lean_objects(item)
        return
    if not isinstance(node, dict):
        return
    if is_step(node):
        properties: Schema = node["properties"]
        required = [name for name in node.get("required", [])
                    if name in properties and not may_be_empty(properties[name])]
        node["required"] = required
        if not required:
            del node["required"]
        described = node.get("description")
        node["description"] = f"{described} {LEAN_NOTE}" if described else LEAN_NOTE
    for value in node.values():
        _lean_objects(value)


def may_be_empty(prop: Schema) -> bool:
    """Whether a value of this property can be one that a lean answer leaves out."""
    if prop.get("type") in ("array", "object") or _empty_default(prop):
        return True
    return any(branch.get("type") == "null" for branch in prop.get("anyOf", []))


def _empty_default(prop: Schema) -> bool:
    """A default that says nothing: false, 0 or "" (a count of none, a flag not set)."""
    default = prop.get("default", ...)
    return default is not ... and default in (False, 0, "")


def lean_answer(value: Any, schema: Schema | None) -> Any:
    """The answer with every step object in it lean, as `lean_schema(schema)` describes;
    `schema` is the tool's output schema as the SDK made it (not the lean one)."""
    if schema is None:
        return value
    return _lean(value, schema, schema.get("$defs", {}))


def _lean(value: Any, schema: Schema, defs: Schema) -> Any:
    schema = _resolved(schema, defs)
    if "anyOf" in schema and value is not None:
        branches = [b for b in schema["anyOf"] if b.get("type") != "null"]
        return _lean(value, branches[0], defs) if len(branches) == 1 else value
    if isinstance(value, list):
        items = schema.get("items")
        return value if not isinstance(items, dict) else [_lean(v, items, defs) for v in value]
    if not isinstance(value, dict):
        return value
    properties: Schema = schema.get("properties", {})
    step = is_step(schema)
    kept = {}
    for name, item in value.items():
        prop = _resolved(properties.get(name, {}), defs)
        if step and _empty(item, prop):
            continue
        kept[name] = _lean(item, prop, defs)
    return kept


def _empty(value: Any, prop: Schema) -> bool:
    if value is None or value in ([], {}):
        return True
    return _empty_default(prop) and value == prop["default"] and type(value) is type(
        prop["default"])


def _resolved(schema: Schema, defs: Schema) -> Schema:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found = defs.get(ref.removeprefix("#/$defs/"))
        return found if isinstance(found, dict) else {}
    return schema
