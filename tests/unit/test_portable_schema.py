"""Tool input schemas made portable (api.mcp.portable): what the rewrite keeps and adds."""

from planledger.api.mcp.portable import portable


def test_references_are_inlined_and_definitions_dropped() -> None:
    schema = {"$defs": {"Step": {"type": "object", "properties": {
        "title": {"type": "string", "description": "t"}}}},
        "type": "object", "properties": {"steps": {"type": "array", "description": "s",
                                                   "items": {"$ref": "#/$defs/Step"}}}}
    assert portable(schema) == {"type": "object", "properties": {"steps": {
        "type": "array", "description": "s", "items": {"type": "object", "properties": {
            "title": {"type": "string", "description": "t"}}}}}}


def test_an_optional_argument_gets_the_types_of_its_options_and_its_lone_description() -> None:
    lease = {"anyOf": [{"type": "integer", "description": "seconds"}, {"type": "null"}]}
    assert portable({"properties": {"lease": lease}})["properties"]["lease"] == {
        **lease, "type": ["integer", "null"], "description": "seconds"}


def test_an_anyof_with_an_untyped_option_is_left_without_a_type() -> None:
    loose = {"anyOf": [{"type": "string"}, {"enum": [1, 2]}], "description": "d"}
    assert portable({"properties": {"x": loose}})["properties"]["x"] == loose


def test_the_schema_given_is_not_changed() -> None:
    schema = {"$defs": {"A": {"type": "string"}}, "properties": {
        "a": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}}}
    before = repr(schema)
    portable(schema)
    assert repr(schema) == before
