"""The registry, the @tool decorator, the error tree and the public surface."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any

import pytest
import toolcage.runtime
from pydantic import Field
from toolcage.runtime import (
    ErrorKind,
    FunctionDecl,
    Runtime,
    SafetyTier,
    ToolError,
    ToolExecutionContext,
    ToolResult,
    ToolTimeoutError,
    UsageError,
    tool,
)
from toolcage.runtime._errors import ERROR_CLASSES
from toolcage.runtime._registry import ToolRegistry

from .sample_tools import describe, echo

pytestmark = pytest.mark.anyio


class Named:
    safety_tier = SafetyTier.READ_ONLY
    timeout = 1.0

    def __init__(self, name: str) -> None:
        self.name = name

    def schema(self) -> FunctionDecl:
        return FunctionDecl(self.name, "d", {"type": "object", "properties": {}})

    async def execute(self, args: Mapping[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.text("")


class TestToolRegistry:
    @pytest.mark.parametrize(
        "name", ["FileRead", "file-read", "file___read", "a__b__c", "_x", "x_", "1x", ""]
    )
    def test_names_must_be_snake_case(self, name: str) -> None:
        with pytest.raises(UsageError, match="snake_case"):
            ToolRegistry([Named(name)])

    def test_one_double_underscore_separates_a_server_prefix(self) -> None:
        assert "notes__read_note" in ToolRegistry([Named("notes__read_note")])

    def test_names_fit_every_provider(self) -> None:
        ToolRegistry([Named("a" * 64)])
        with pytest.raises(UsageError, match="longer than 64 characters"):
            ToolRegistry([Named("a" * 65)])

    def test_names_must_be_unique(self) -> None:
        with pytest.raises(UsageError, match="already registered"):
            ToolRegistry([Named("dup"), Named("dup")])

    def test_enabling_unknown_tools_is_a_usage_error(self) -> None:
        with pytest.raises(UsageError, match="unknown tools: ghost"):
            ToolRegistry([Named("real")]).enable_only("agent", ["real", "ghost"])

    def test_listing_has_name_description_tier_and_needs(self) -> None:
        async def noop() -> None:
            return None

        runtime = Runtime.from_config(None)
        rows = {r.name: r for r in runtime.registry.listing()}
        row = rows["tool_output_read"]
        assert row.safety_tier is SafetyTier.READ_ONLY
        assert row.needs == ("output store",)
        assert row.description.startswith("Read more of a tool output")


class TestToolDecorator:
    def test_schema_from_type_hints_and_docstring(self) -> None:
        schema = describe.schema()
        assert schema.description == "Describe every kind of parameter."
        params = schema.parameters
        props = params["properties"]
        assert params["required"] == ["count", "ratio", "flag", "tags", "extra", "colour"]
        assert params["additionalProperties"] is False
        assert props["count"] == {"type": "integer", "description": "How many."}
        assert props["ratio"]["type"] == "number"
        assert props["flag"]["type"] == "boolean"
        assert props["tags"] == {
            "type": "array",
            "items": {"type": "string"},
            "description": "Labels, possibly spanning two lines.",
        }
        assert props["extra"]["additionalProperties"] == {"type": "integer"}
        assert props["colour"]["enum"] == ["red", "blue"]
        assert props["mode"]["enum"] == ["fast", "slow"]
        assert props["mode"]["default"] == "fast"
        assert {"type": "null"} in props["note"]["anyOf"]
        point = next(o for o in props["point"]["anyOf"] if o.get("type") == "object")
        assert point["properties"]["x"] == {"type": "integer"}
        assert "ctx" not in props
        assert "$defs" not in json.dumps(params)
        assert "$ref" not in json.dumps(params)

    def test_sphinx_style_parameter_docs(self) -> None:
        @tool
        def greet(name: str) -> str:
            """Greet someone.

            :param name: Who to greet.
            """
            return f"hi {name}"

        assert greet.schema().parameters["properties"]["name"]["description"] == "Who to greet."
        assert greet.safety_tier is SafetyTier.SIDE_EFFECTING

    def test_parameters_without_hints_are_refused(self) -> None:
        with pytest.raises(UsageError, match="needs a type hint"):

            @tool
            def untyped(x) -> None:  # type: ignore[no-untyped-def]
                """No hints."""

    async def test_context_is_injected(self) -> None:
        @tool
        async def whoami(ctx: ToolExecutionContext) -> str:
            """Say who calls."""
            return ctx.user_id

        result = await Runtime(tools=[whoami]).execute(
            "whoami", {}, ToolExecutionContext(user_id="ada")
        )
        assert result.output_text == "ada"

    async def test_structured_return_values_become_json_and_details(self) -> None:
        @tool
        def stats() -> dict[str, int]:
            """Some numbers."""
            return {"a": 1}

        result = await Runtime(tools=[stats]).execute("stats", {})
        assert (result.output_text, result.details) == ('{"a": 1}', {"a": 1})

    def test_decorated_function_stays_callable(self) -> None:
        assert echo.__name__ == "echo"


class TestErrorTree:
    def test_one_class_per_error_type(self) -> None:
        assert set(ERROR_CLASSES) == set(ErrorKind)
        for kind, cls in ERROR_CLASSES.items():
            assert issubclass(cls, ToolError)
            envelope = cls("boom", field="f").envelope("t")
            assert envelope == {
                "status": "error",
                "tool": "t",
                "error_type": kind.value,
                "message": "boom",
                "field": "f",
            }

    def test_timeout_is_also_a_builtin_timeout(self) -> None:
        assert issubclass(ToolTimeoutError, TimeoutError)


class TestPublicSurface:
    def test_all_is_sorted_and_complete(self) -> None:
        exported = toolcage.runtime.__all__
        assert exported == sorted(exported)
        public = {
            name
            for name, value in vars(toolcage.runtime).items()
            if not name.startswith("_") and getattr(value, "__module__", "").startswith("toolcage")
        }
        assert public <= set(exported)


class TestToolDecoratorFidelity:
    def test_annotated_field_keeps_its_description_and_constraints(self) -> None:
        @tool
        def pick(
            count: Annotated[int, Field(description="How many to pick.", ge=1, le=10)],
            prefix: Annotated[str, Field(max_length=3)] = "a",
        ) -> str:
            """Pick some.

            Args:
                count: Ignored, the Field says it.
                prefix: Start of each pick.
            """
            return prefix * count

        props = pick.schema().parameters["properties"]
        assert props["count"] == {
            "type": "integer",
            "description": "How many to pick.",
            "minimum": 1,
            "maximum": 10,
        }
        assert props["prefix"]["maxLength"] == 3
        assert props["prefix"]["description"] == "Start of each pick."

    async def test_field_constraints_hold_through_from_config(self) -> None:
        @tool
        def pick(
            count: Annotated[int, Field(ge=1, le=10)], label: str = Field("x", min_length=1)
        ) -> str:
            """Pick some."""
            return label * count

        async with Runtime.from_config(None, tools=[pick]) as runtime:
            refused = await runtime.execute("pick", {"count": 11})
            assert refused.error is not None
            assert (refused.error.kind, refused.error.field) == (
                ErrorKind.VALIDATION_ERROR,
                "count",
            )
            assert (await runtime.execute("pick", {"count": 2})).output_text == "xx"
            assert (await runtime.execute("pick", {"count": 2, "label": ""})).is_error

    def test_the_whole_docstring_without_its_parameters_is_the_description(self) -> None:
        @tool
        def archive(path: str, level: int = 6) -> str:
            """Compress a file into a gzip archive.

            The original is kept. Archives larger than the workspace quota
            are refused.

            Args:
                path: The file to compress.
                level: Compression level,
                    1 (fast) to 9 (small).

            Returns:
                The archive's path.
            """
            return path

        decl = archive.schema()
        assert decl.description == (
            "Compress a file into a gzip archive.\n\n"
            "The original is kept. Archives larger than the workspace quota\nare refused.\n\n"
            "Returns: The archive's path."
        )
        assert "Args" not in decl.description
        assert decl.parameters["properties"]["level"]["description"] == (
            "Compression level, 1 (fast) to 9 (small)."
        )

    def test_numpy_style_parameter_docs(self) -> None:
        @tool
        def scale(value: float, factor: float = 2.0) -> float:
            """Scale a value.

            Parameters
            ----------
            value : float
                The value to scale.
            factor : float, optional
                What to multiply by.
            """
            return value * factor

        props = scale.schema().parameters["properties"]
        assert props["value"]["description"] == "The value to scale."
        assert props["factor"]["description"] == "What to multiply by."
        assert scale.schema().description == "Scale a value."

    def test_sphinx_style_with_types(self) -> None:
        @tool
        def greet(name: str, times: int = 1) -> str:
            """Greet someone.

            :param str name: Who to greet.
            :param times: How often.
            :returns: the greeting
            """
            return f"hi {name}" * times

        props = greet.schema().parameters["properties"]
        assert (props["name"]["description"], props["times"]["description"]) == (
            "Who to greet.",
            "How often.",
        )

    def test_the_listing_shows_the_parameters(self) -> None:
        runtime = Runtime(tools=[echo])
        (row,) = runtime.registry.listing()
        assert row.parameters == echo.schema().parameters
