"""Argument schemas: the compiled check agrees with JSON Schema.

The compiled predicate (``toolcage.runtime._compiled_schema``) answers for the schemas tools
use; :mod:`jsonschema` stays the reference. Each case is checked against it: where the
predicate says valid, Draft 2020-12 says valid, and for plain JSON values the two agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import jsonschema
import pytest
from toolcage.runtime import (
    FunctionDecl,
    Runtime,
    SafetyTier,
    ToolExecutionContext,
    ToolResult,
)
from toolcage.runtime._compiled_schema import compile_schema

pytestmark = pytest.mark.anyio

# Each case: a schema, then values to check against it (valid and invalid ones alike).
AGREEMENT: list[tuple[Any, list[Any]]] = [
    # every JSON type, and the values each one admits
    *(
        ({"type": name}, [None, True, False, 0, 1, -3, 1.5, 2.0, "", "x", [], [1], {}, {"a": 1}])
        for name in ("object", "array", "string", "integer", "number", "boolean", "null")
    ),
    ({"type": ["string", "null"]}, [None, "a", 1, [], True]),
    ({"type": ["integer", "boolean"]}, [1, True, 1.5, "1", None]),
    # strings: lengths (in code points) and patterns (searched, not anchored)
    ({"type": "string", "minLength": 2, "maxLength": 3}, ["", "a", "ab", "abc", "abcd", "é✓", 5]),
    ({"minLength": 1}, ["", "a", 0, None, []]),
    ({"type": "string", "pattern": "^[a-z]+$"}, ["abc", "ab1", "", "ABC"]),
    ({"pattern": "b"}, ["abc", "xyz", 1, None]),
    # numbers: bounds apply to numbers only; booleans are no numbers
    ({"minimum": 1, "maximum": 5}, [0, 1, 5, 6, 0.5, 5.5, True, "9", None]),
    ({"exclusiveMinimum": 0, "exclusiveMaximum": 1}, [0, 0.5, 1, -1, 2, "x"]),
    ({"type": "number", "minimum": 0.5}, [0, 0.5, 1, True, "1"]),
    # enums and consts of strings
    ({"enum": ["red", "blue"]}, ["red", "blue", "pink", 1, None, ["red"]]),
    ({"type": "string", "enum": []}, ["a", ""]),
    ({"const": "on"}, ["on", "off", 1, True]),
    # arrays
    ({"type": "array", "items": {"type": "string"}}, [[], ["a"], ["a", 1], "ab", {"0": "a"}]),
    ({"minItems": 1, "maxItems": 2}, [[], [1], [1, 2], [1, 2, 3], "abc", {}]),
    ({"items": False}, [[], [1], "x"]),
    ({"items": {"type": "array", "items": {"type": "integer"}}}, [[[1], [2, 3]], [[1], ["2"]]]),
    # objects
    (
        {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
            "required": ["a"],
            "additionalProperties": False,
        },
        [{"a": 1}, {"a": 1, "b": "x"}, {"b": "x"}, {"a": "1"}, {"a": 1, "c": 2}, {}, [], "a"],
    ),
    (
        {"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
        [{"a": "x", "b": 1}, {"a": "x", "b": "y"}, {"b": 2}, {}, 5],
    ),
    ({"required": ["x", "y"]}, [{"x": 1, "y": None}, {"x": 1}, {}, [], "xy"]),
    ({"properties": {"a": True, "b": False}}, [{"a": 1}, {"b": 1}, {}]),
    (
        {"properties": {"inner": {"properties": {"deep": {"type": "boolean"}}}}},
        [{"inner": {"deep": True}}, {"inner": {"deep": 1}}, {"inner": 3}],
    ),
    # anyOf, as pydantic writes Optional[...]
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, [1, None, "1", 1.5, True]),
    (
        {"anyOf": [{"type": "string", "maxLength": 1}, {"type": "array", "maxItems": 1}]},
        ["a", "ab", [1], [1, 2], None],
    ),
    # annotations change nothing
    (
        {
            "type": "integer",
            "title": "N",
            "description": "A number.",
            "default": 3,
            "examples": [1, 2],
            "deprecated": False,
            "readOnly": True,
            "writeOnly": False,
            "$comment": "note",
            "format": "int32",
        },
        [1, "1", 1.5],
    ),
    (True, [1, "a", None]),
    (False, [1, "a", None]),
]


def _reference_valid(schema: Any, value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def _compiled(schema: Any) -> Any:
    """The predicate of ``schema`` (a non-object schema wrapped as a property)."""
    if isinstance(schema, bool):
        wrapped = compile_schema({"properties": {"v": schema}})
        assert wrapped is not None
        return lambda value: wrapped({"v": value})
    check = compile_schema(schema)
    assert check is not None, schema
    return check


class TestCompiledSchemaAgreesWithJsonSchema:
    @pytest.mark.parametrize(("schema", "values"), AGREEMENT, ids=lambda v: json.dumps(v)[:60])
    def test_it_answers_as_draft_2020_12_for_plain_json(
        self, schema: Any, values: list[Any]
    ) -> None:
        check = _compiled(schema)
        for value in values:
            assert check(value) == _reference_valid(schema, value), (schema, value)

    @pytest.mark.parametrize(("schema", "values"), AGREEMENT, ids=lambda v: json.dumps(v)[:60])
    def test_every_compiled_schema_is_a_valid_schema(self, schema: Any, values: list[Any]) -> None:
        del values
        jsonschema.Draft202012Validator.check_schema(schema)

    def test_values_of_other_python_types_are_left_to_the_full_validator(self) -> None:
        # a tuple is no array, a MappingProxy no object: never a wrong "valid"
        schema = {
            "properties": {"n": {"type": "object"}, "items": {"type": "array", "maxItems": 1}}
        }
        check = _compiled(schema)
        values: list[dict[str, Any]] = [
            {"n": MappingProxyType({})},
            {"items": (1, 2)},
            {"items": (1,)},
        ]
        for value in values:
            if check(value):
                assert _reference_valid(schema, value)


class TestWhatIsNotCompiled:
    @pytest.mark.parametrize(
        "schema",
        [
            {"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}},
            {"allOf": [{"type": "string"}]},
            {"oneOf": [{"type": "string"}]},
            {"not": {"type": "string"}},
            {"patternProperties": {"^a": {"type": "string"}}},
            {"uniqueItems": True},
            {"multipleOf": 2},
            {"enum": [1, 2]},
            {"const": 1},
            {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
            {"x-vendor": 1},
            {"properties": {"a": {"if": {"type": "string"}}}},
        ],
        ids=lambda v: json.dumps(v)[:60],
    )
    def test_schemas_beyond_the_subset_are_left_to_jsonschema(self, schema: Any) -> None:
        assert compile_schema(schema) is None

    @pytest.mark.parametrize(
        "schema",
        [
            {"type": "strin"},
            {"type": []},
            {"type": ["string", "string"]},
            {"minLength": -1},
            {"minLength": 1.5},
            {"maxItems": "3"},
            {"minimum": "one"},
            {"minimum": True},
            {"pattern": "("},
            {"pattern": 5},
            {"required": "a"},
            {"required": ["a", "a"]},
            {"properties": []},
            {"properties": {"a": 5}},
            {"additionalProperties": None},
            {"items": "string"},
            {"anyOf": []},
            {"description": 5},
            {"examples": "x"},
            {"minLength": None},
        ],
        ids=lambda v: json.dumps(v)[:60],
    )
    def test_invalid_schemas_are_never_compiled(self, schema: Any) -> None:
        with pytest.raises(jsonschema.SchemaError):
            jsonschema.Draft202012Validator.check_schema(schema)
        assert compile_schema(schema) is None


class SchemaTool:
    """A tool with a given parameters schema that echoes its arguments."""

    safety_tier = SafetyTier.READ_ONLY
    timeout = 5.0

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        self._decl = FunctionDecl("shaped", "Echo the arguments.", parameters)

    def schema(self) -> FunctionDecl:
        return self._decl

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.text(json.dumps(args, sort_keys=True))


class TestThroughTheRuntime:
    async def test_a_tool_with_an_invalid_schema_fails_its_call_naming_the_schema(self) -> None:
        tool = SchemaTool({"type": "object", "properties": {"n": {"minimum": "one"}}})
        envelope = (await Runtime(tools=[tool]).execute("shaped", {"n": 1})).envelope()
        assert envelope["status"] == "error"
        assert "has an invalid schema" in envelope["message"]

    async def test_a_schema_beyond_the_subset_still_validates(self) -> None:
        tool = SchemaTool(
            {"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}}
        )
        runtime = Runtime(tools=[tool])
        assert (await runtime.execute("shaped", {"n": 4})).envelope()["status"] == "success"
        envelope = (await runtime.execute("shaped", {"n": 3})).envelope()
        assert envelope["error_type"] == "validation_error"
        assert envelope["field"] == "n"

    async def test_an_integral_float_is_still_an_integer(self) -> None:
        tool = SchemaTool({"type": "object", "properties": {"n": {"type": "integer"}}})
        result = await Runtime(tools=[tool]).execute("shaped", '{"n": 2.0}')
        assert result.envelope()["result"] == '{"n": 2.0}'
