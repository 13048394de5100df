"""Arguments as agents send them, read the way each tool means them.

Agents and prompts written for other task queues (Seamless's tool names are ours) send
`id` for `step_id`, `slug` for `plan`, `content` or `text` for `body`, `""` for an
argument they leave out, and a list of ids as one string (`"01K…"` or `"01K…,01K…"`).
Each is read as the tool's own argument before the tool's schema checks it, so an agent's
first calls work, and the schema names the one vocabulary (with its aliases said).
"""

from typing import Any

# An argument's other names, by its own name.
ALIASES: dict[str, tuple[str, ...]] = {
    "step_id": ("id",),
    "plan": ("slug",),
    "body": ("content", "text"),
}
_CANONICAL = {alias: name for name, aliases in ALIASES.items() for alias in aliases}
# Lists of ids an agent may send as one string, "01K…" or "01K…,01K…".
ID_LISTS = frozenset({"depends_on", "add_depends_on"})


def normalized(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` under the tool's own names, `""` for an optional argument left out, and
    a string where a list of ids is wanted split on commas."""
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    read: dict[str, Any] = {}
    for sent, value in arguments.items():
        own = _CANONICAL.get(sent)
        name = own if (sent not in properties and own in properties
                       and own not in arguments) else sent
        if value == "" and name in properties and name not in required:
            continue
        listed = (isinstance(value, str) and name in ID_LISTS
                  and _wants_list(properties.get(name)))
        read[name] = _split(value) if listed else value
    if isinstance(read.get("steps"), list):  # plans_create: each step object read alike
        read["steps"] = [_step(s) if isinstance(s, dict) else s for s in read["steps"]]
    return read


def _step(step: dict[str, Any]) -> dict[str, Any]:
    """A plan step object under its own names: `content`/`text` as `body`, `""` left out,
    `depends_on` as one string split on commas."""
    read: dict[str, Any] = {}
    for sent, value in step.items():
        own = _CANONICAL.get(sent)
        name = own if own == "body" and own not in step else sent
        if value == "" and name != "title":
            continue
        read[name] = _split(value) if name == "depends_on" and isinstance(value, str) else value
    return read


def _split(ids: str) -> list[str]:
    return [p.strip() for p in ids.split(",") if p.strip()]


def _wants_list(schema: dict[str, Any] | None) -> bool:
    if not schema:
        return False
    options = [schema, *schema.get("anyOf", ())]
    return any(option.get("type") == "array" for option in options)
