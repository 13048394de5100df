"""Tool input schemas every client can read.

Pydantic writes a nested model as `$ref` into `$defs`, an optional argument as
`anyOf [T, null]` with no `type`, and the description of an `Annotated[list[...] , Field()]`
made optional inside the `anyOf`. Clients that convert tool schemas to other
function-calling formats choke on `$ref`; the MCP Inspector, finding no `type`, sends
`"60"` as a string; an agent reading the top level sees no description. `portable` rewrites
a schema once, at registration: references inlined, a `type` beside each `anyOf` whose
options all name one, and a lone description moved up to the argument it describes. The
tools' own validation (their pydantic argument models) is untouched.
"""

import copy
from typing import Any

Schema = dict[str, Any]


def portable(schema: Schema) -> Schema:
    """`schema` with no `$ref`/`$defs`, a `type` on every `anyOf` of typed options, and
    each property's description at its top level."""
    definitions: dict[str, Schema] = schema.get("$defs", {})
    body = {k: v for k, v in schema.items() if k != "$defs"}
    rewritten: Schema = _rewritten(body, definitions)
    return rewritten


def _rewritten(node: Any, definitions: dict[str, Schema]) -> Any:
    if isinstance(node, list):
        return [_rewritten(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        # "#/$defs/Name"; pydantic emits no recursive models for our arguments
        target = copy.deepcopy(definitions[ref.rsplit("/", 1)[-1]])
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    out = {key: _rewritten(value, definitions) for key, value in node.items()}
    if "anyOf" in out and "type" not in out:
        types = _option_types(out["anyOf"])
        if types:
            out["type"] = types[0] if len(types) == 1 else types
    if "anyOf" in out and "description" not in out:
        lone = [o["description"] for o in out["anyOf"] if "description" in o]
        if len(lone) == 1:
            out["description"] = lone[0]
    return out


def _option_types(options: list[Any]) -> list[str]:
    """The JSON types of an `anyOf`'s options, in order, once each; [] when one option
    names none (then a `type` would narrow what the schema allows)."""
    types: list[str] = []
    for option in options:
        named = option.get("type") if isinstance(option, dict) else None
        if named is None:
            return []
        for one in named if isinstance(named, list) else [named]:
            if one not in types:
                types.append(one)
    return types
